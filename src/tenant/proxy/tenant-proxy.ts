import httpProxy from '@fastify/http-proxy';
import Fastify, {
  LogController,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify';
import type { IncomingHttpHeaders } from 'node:http';
import { decodeKey32 } from '../../config/config.schema';
import { errorBody } from '../../common/http/envelope';
import { requestIdFor } from '../../common/http/request-id';
import { codeForStatus, type ErrorCode } from '../../common/errors/error-codes';
import { encryptTenantHeader } from '../tenant-header.crypto';
import { tenantCodeFromHost } from './tenant-host';

export const TENANT_HEADER = 'x-tenant-id';

export interface TenantProxyOptions {
  /** Base URL of the service, e.g. http://127.0.0.1:8008; a function is asked per request. */
  upstream: string | (() => string);
  /** `<tenant_code>.<baseDomain>` selects the tenant. */
  baseDomain: string;
  /** TENANT_ENCRYPTION_KEY: the same key the service decrypts with (spec §5, D5). */
  tenantEncryptionKey: string | Buffer;
  /** The id of the active tenant with this code, or undefined (usually a cached TenantDirectory). */
  resolveTenant: (code: string) => Promise<number | undefined>;
  /** Fastify/pino logger options; false (default) logs nothing. */
  logger?: FastifyServerOptions['logger'];
  /** Put the current unix time into every header so the service can enforce TENANT_HEADER_MAX_AGE_S (D6). Default true. */
  timestamp?: boolean;
}

function sendError(
  reply: FastifyReply,
  request: FastifyRequest,
  status: number,
  code: ErrorCode,
  message: string,
): FastifyReply {
  return reply
    .code(status)
    .header('x-request-id', request.id)
    .header('content-type', 'application/json; charset=utf-8')
    .send(errorBody(code, message, null, request.id));
}

/** Status of an error of @fastify/reply-from or Fastify itself, when it has a usable one. */
function statusOf(error: unknown): number | undefined {
  const status = (error as { statusCode?: unknown } | null)?.statusCode;
  return typeof status === 'number' && status >= 400 && status <= 599 ? status : undefined;
}

/**
 * The proxy's half of the tenant header (D7): a Fastify server that maps the Host
 * `<tenant_code>.<base domain>` to the tenant id, drops any `x-tenant-id` the client sent, injects
 * a freshly encrypted one, and forwards everything else (method, path, query, body, headers,
 * `x-request-id`) to the service. A host that names no active tenant gets the service's 404
 * envelope without the service being contacted.
 */
export async function buildTenantProxy(options: TenantProxyOptions): Promise<FastifyInstance> {
  const key = Buffer.isBuffer(options.tenantEncryptionKey)
    ? options.tenantEncryptionKey
    : decodeKey32(options.tenantEncryptionKey);
  if (!key || key.length !== 32) {
    throw new Error('TENANT_ENCRYPTION_KEY must be 32 bytes as 64 hex characters or base64 (D5)');
  }
  const withTimestamp = options.timestamp !== false;
  const upstreamOf = options.upstream;
  const upstream = typeof upstreamOf === 'string' ? upstreamOf.replace(/\/+$/, '') : '';

  const app = Fastify({
    logger: options.logger ?? false,
    // One access-log line per request from the onResponse hook below, not Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    // D19, as the service does it: keep a sane client x-request-id, else a UUID; forwarded upstream.
    genReqId: (req) => requestIdFor(req),
    forceCloseConnections: 'idle',
  });

  const tenantOf = new WeakMap<FastifyRequest, { code: string; id: number }>();

  app.addHook('onRequest', async (request, reply) => {
    const code = tenantCodeFromHost(request.headers.host, options.baseDomain);
    if (!code) {
      return sendError(
        reply,
        request,
        404,
        'NOT_FOUND',
        `No tenant in the host name: use <tenant_code>.${options.baseDomain}`,
      );
    }
    let id: number | undefined;
    try {
      id = await options.resolveTenant(code);
    } catch (err) {
      request.log.error({ err, tenantCode: code }, 'Tenant lookup failed');
      reply.header('retry-after', '5');
      return sendError(reply, request, 503, 'SERVICE_ERROR', 'Tenant lookup failed; try again later');
    }
    if (id === undefined) return sendError(reply, request, 404, 'NOT_FOUND', 'Tenant not found');
    tenantOf.set(request, { code, id });
    return undefined;
  });

  app.addHook('onResponse', async (request, reply) => {
    const tenant = tenantOf.get(request);
    request.log.info(
      {
        host: request.headers.host,
        tenantCode: tenant?.code,
        tenantId: tenant?.id,
        statusCode: reply.statusCode,
        responseTime: Math.round(reply.elapsedTime),
      },
      `${request.method} ${request.url} ${reply.statusCode}`,
    );
  });

  app.setNotFoundHandler((request, reply) => {
    sendError(
      reply,
      request,
      404,
      'NOT_FOUND',
      `Route ${request.method} ${request.url.split('?')[0]} not found`,
    );
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const status = statusOf(error) ?? 500;
    if (status >= 500) request.log.error({ err: error }, 'Proxy error');
    const message = status >= 500 ? 'Internal proxy error' : error.message;
    sendError(reply, request, status, codeForStatus(status), message);
  });

  await app.register(httpProxy, {
    upstream,
    disableRequestLogging: true,
    replyOptions: {
      ...(typeof upstreamOf === 'function' ? { getUpstream: () => upstreamOf().replace(/\/+$/, '') } : {}),
      rewriteRequestHeaders: (request, headers) => {
        const tenant = tenantOf.get(request as FastifyRequest);
        if (!tenant) throw new Error('No tenant resolved for a forwarded request');
        const out: IncomingHttpHeaders = { ...(headers as IncomingHttpHeaders) };
        // Whatever the client sent is dropped: only the proxy speaks for the tenant (spec §1, §5.6).
        for (const name of Object.keys(out)) if (name.toLowerCase() === TENANT_HEADER) delete out[name];
        out[TENANT_HEADER] = encryptTenantHeader(
          tenant.id,
          key,
          withTimestamp ? Math.floor(Date.now() / 1000) : undefined,
        );
        out['x-request-id'] = request.id;
        const forwardedFor = headers['x-forwarded-for'];
        out['x-forwarded-for'] = forwardedFor ? `${String(forwardedFor)}, ${request.ip}` : request.ip;
        out['x-forwarded-host'] = request.headers.host;
        out['x-forwarded-proto'] = request.protocol;
        return out;
      },
      // Passed through as they are: the service's 503 (readiness gate) must reach the client.
      retryDelay: () => null,
      // @fastify/reply-from has already logged the cause (warn, "response errored").
      onError: (reply, { error }) => {
        const request = reply.request as FastifyRequest;
        const timedOut = statusOf(error) === 504;
        sendError(
          reply as FastifyReply,
          request,
          timedOut ? 504 : 502,
          'SERVICE_ERROR',
          timedOut ? 'The service did not answer in time' : 'The service is unreachable',
        );
      },
    },
  });

  return app;
}
