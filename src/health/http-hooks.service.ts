import { httpStatusOf } from '../common/errors/error-codes';
import { Injectable, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import { NotReadyError } from '../common/errors/app-error';
import { errorBody } from '../common/http/envelope';
import { requestScope } from '../common/request-scope';
import { HttpDrainService } from './http-drain.service';
import { MetricsService } from './metrics.service';
import { PROBE_PATHS } from '../common/http/probe-paths';
import { ReadinessService } from './readiness.service';
import type {} from '../common/decorators/context.decorators';

function isProbe(url: string): boolean {
  const q = url.indexOf('?');
  return PROBE_PATHS.has(q === -1 ? url : url.slice(0, q));
}

/**
 * Fastify hooks that must see every request, matched or not: the x-request-id echo (D19), the
 * readiness gate (spec §3.3) and request metrics. Registered from the module, so every app built
 * from AppModule (tests included) has them.
 */
@Injectable()
export class HttpHooksService implements OnModuleInit {
  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly readiness: ReadinessService,
    private readonly metrics: MetricsService,
    private readonly drain: HttpDrainService,
  ) {}

  onModuleInit(): void {
    const fastify = this.adapterHost.httpAdapter.getInstance<FastifyInstance>();

    // The async-local scope of the request (common/request-scope.ts): the rest of the request —
    // hooks, guards, handler, the use cases it calls — runs inside it, so every log line written
    // for it carries requestId (and tenantId and userId once the guards have them). Then the
    // x-request-id echo and the readiness gate. Callback style: no promise per request.
    fastify.addHook('onRequest', (request, reply, done) => {
      void reply.header('x-request-id', request.id);
      // Probes log nothing and are never gated: no scope for them (issue 14: an async-local
      // scope costs every promise of the request a hook).
      if (isProbe(request.url)) {
        done();
        return;
      }
      if (this.readiness.ready) {
        // The scope object is kept on the request, where the guards add the tenant and the user.
        const scope = { requestId: request.id, tenantId: undefined, userId: undefined };
        request.logScope = scope;
        requestScope.enter(scope, done);
        return;
      }
      const stopping = this.drain.draining;
      if (stopping) {
        // Shutdown (issue 20 #5): no answer of the drain leaves its connection open, and a
        // request whose bytes were queued before the signal is still served.
        void reply.header('connection', 'close');
        if (this.drain.admit(this.readiness.started)) {
          const scope = { requestId: request.id, tenantId: undefined, userId: undefined };
          request.logScope = scope;
          requestScope.enter(scope, done);
          return;
        }
      }
      const err = new NotReadyError(this.readiness.snapshot(), stopping);
      request.errorCode = err.code;
      void reply
        .status(httpStatusOf(err.code))
        .headers(err.headers)
        .send(errorBody(err.code, err.message, err.details, request.id));
    });

    fastify.addHook('onResponse', (request, reply, done) => {
      const route = request.routeOptions.url ?? 'unmatched';
      this.metrics.observe(request.method, route, reply.statusCode, reply.elapsedTime / 1000);
      done();
    });
  }
}
