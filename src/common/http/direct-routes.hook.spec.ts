import { CanActivate, Controller, Get, Injectable, Module } from '@nestjs/common';
import { APP_GUARD, NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { NoTenant } from '../decorators/context.decorators';
import { DirectRoute, Public, RawResponse } from '../decorators/public.decorator';
import { directRoutes, installDirectRoutes } from './direct-routes.hook';

/** Counts the requests the Nest pipeline saw (a global guard, as the application's are). */
@Injectable()
class CountingGuard implements CanActivate {
  static calls = 0;
  canActivate(): boolean {
    CountingGuard.calls++;
    return true;
  }
}

@Public()
@NoTenant()
@RawResponse()
@Controller()
class ProbeController {
  private hits = 0;

  @Get('direct')
  @DirectRoute()
  direct(): { hits: number } {
    return { hits: ++this.hits };
  }

  @Get('piped')
  piped(): { ok: boolean } {
    return { ok: true };
  }
}

@Controller()
class ProtectedController {
  @Get('protected')
  @DirectRoute()
  protectedRoute(): string {
    return 'never';
  }
}

async function build(controllers: Array<new (...a: never[]) => unknown>): Promise<NestFastifyApplication> {
  @Module({ controllers, providers: [CountingGuard, { provide: APP_GUARD, useExisting: CountingGuard }] })
  class TestModule {}
  return NestFactory.create<NestFastifyApplication>(TestModule, new FastifyAdapter(), { logger: false });
}

describe(installDirectRoutes.name, () => {
  it('should answer a @DirectRoute() from Fastify, without the Nest pipeline, and the others through it', async () => {
    const app = await build([ProbeController]);
    installDirectRoutes(app);
    await app.init();
    CountingGuard.calls = 0;
    const direct = await app.inject({ method: 'GET', url: '/direct' });
    expect(direct.statusCode).toBe(200);
    expect(direct.json()).toEqual({ hits: 1 });
    expect((await app.inject({ method: 'GET', url: '/direct' })).json()).toEqual({ hits: 2 });
    expect(CountingGuard.calls).toBe(0);
    expect((await app.inject({ method: 'GET', url: '/piped' })).json()).toEqual({ ok: true });
    expect(CountingGuard.calls).toBe(1);
    await app.close();
  });

  it('should refuse at start-up a @DirectRoute() that is not public, tenant-free and raw', async () => {
    const app = await build([ProtectedController]);
    expect(() => directRoutes(app)).toThrow(
      /ProtectedController\.protectedRoute: a @DirectRoute\(\) must be/,
    );
    await app.close();
  });
});
