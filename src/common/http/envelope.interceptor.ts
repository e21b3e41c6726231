import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { map, Observable } from 'rxjs';
import { RAW_RESPONSE } from '../decorators/public.decorator';
import { Enveloped, successBody } from './envelope';

/** Wraps every handler result in `{success, data, meta}` (D16) unless the route is @RawResponse(). */
@Injectable()
export class EnvelopeInterceptor implements NestInterceptor {
  constructor(private readonly reflector: Reflector) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const raw = this.reflector.getAllAndOverride<boolean>(RAW_RESPONSE, [
      context.getHandler(),
      context.getClass(),
    ]);
    if (raw) return next.handle();
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    return next
      .handle()
      .pipe(
        map((result: unknown) =>
          result instanceof Enveloped
            ? successBody(result.data, request.id, result.extras)
            : successBody(result ?? null, request.id),
        ),
      );
  }
}
