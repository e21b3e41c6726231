import type { FastifyInstance } from 'fastify';
import type { Params } from 'nestjs-pino';
import { createAccessLog } from '../common/logging';
import type {} from '../common/decorators/context.decorators';

/** Writes the access line of every request when its answer has gone (Fastify `onResponse`). */
export function installAccessLog(fastify: FastifyInstance, params: Params): void {
  const write = createAccessLog(params);
  fastify.addHook('onResponse', (request, reply, done) => {
    write({
      id: request.id,
      method: request.method,
      url: request.url,
      statusCode: reply.statusCode,
      elapsedMs: reply.elapsedTime,
      tenantId: request.tenant?.id,
      userId: request.user?.userId,
      errorCode: request.errorCode,
    });
    done();
  });
}
