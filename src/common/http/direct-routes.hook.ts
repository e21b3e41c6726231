import { RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { ModulesContainer } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { NO_TENANT } from '../decorators/context.decorators';
import { DIRECT_ROUTE, IS_PUBLIC, RAW_RESPONSE } from '../decorators/public.decorator';
import { routePath } from './envelope.hook';

type DirectHandler = () => unknown;

/**
 * The @DirectRoute() handlers of the application by `METHOD /path`, bound to their controller
 * instances. A handler marked direct must also be @Public(), @NoTenant() and @RawResponse()
 * (on the method or its class): every global guard then lets it through unconditionally, so
 * calling it without them skips no check. Anything else is a start-up error.
 */
export function directRoutes(app: NestFastifyApplication): Map<string, DirectHandler> {
  const out = new Map<string, DirectHandler>();
  for (const module of app.get(ModulesContainer).values()) {
    for (const wrapper of module.controllers.values()) {
      const type = wrapper.metatype as (new (...args: unknown[]) => unknown) | undefined;
      if (!type) continue;
      const proto = type.prototype as Record<string, unknown>;
      for (const name of Object.getOwnPropertyNames(proto)) {
        const handler = proto[name];
        if (name === 'constructor' || typeof handler !== 'function') continue;
        if (Reflect.getMetadata(DIRECT_ROUTE, handler) !== true) continue;
        const marked = (key: string): boolean =>
          (Reflect.getMetadata(key, handler) ?? Reflect.getMetadata(key, type)) === true;
        if (!marked(IS_PUBLIC) || !marked(NO_TENANT) || !marked(RAW_RESPONSE))
          throw new Error(
            `${type.name}.${name}: a @DirectRoute() must be @Public(), @NoTenant() and @RawResponse()`,
          );
        const instance = wrapper.instance as Record<string, DirectHandler>;
        const method = RequestMethod[Reflect.getMetadata(METHOD_METADATA, handler) as number];
        const prefixes = ([] as string[]).concat((Reflect.getMetadata(PATH_METADATA, type) as string) ?? '');
        const paths = ([] as string[]).concat(
          Reflect.getMetadata(PATH_METADATA, handler) as string | string[],
        );
        for (const prefix of prefixes)
          for (const path of paths) out.set(`${method} ${routePath(prefix, path)}`, () => instance[name]());
      }
    }
  }
  return out;
}

/**
 * Routes the direct handlers straight from Fastify: when Nest registers such a route, its handler
 * (router proxy → guards → pipes → interceptors → handler → response controller) is replaced by a
 * call of the controller method whose result is sent as it is. Fastify's hooks (request id, CORS,
 * readiness, metrics) still run for it. Must be installed before the routes are registered (init).
 */
export function installDirectRoutes(app: NestFastifyApplication): void {
  const handlers = directRoutes(app);
  if (handlers.size === 0) return;
  app
    .getHttpAdapter()
    .getInstance()
    .addHook('onRoute', (route: RouteOptions) => {
      for (const method of ([] as string[]).concat(route.method)) {
        const direct = handlers.get(`${method} ${route.url}`);
        if (!direct) continue;
        route.handler = (_request: FastifyRequest, reply: FastifyReply) => reply.send(direct());
        return;
      }
    });
}
