import type { IncomingMessage } from 'node:http';
import type { Type } from '@nestjs/common';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { NestFactory } from '@nestjs/core';
import { Logger } from 'nestjs-pino';
import { Counter } from 'prom-client';
import { AppModule } from './app.module';
import { installCors } from './common/http/cors.hook';
import { installDirectRoutes } from './common/http/direct-routes.hook';
import { envelopedRoutes, installEnvelope } from './common/http/envelope.hook';
import { clientErrorHandler, frameworkErrorHandler } from './http/client-errors.hook';
import { installBodyParsers } from './common/http/json-body.hook';
import { installMultipart } from './common/http/multipart.hook';
import { DEFAULT_JSON_MAX_DEPTH } from './common/http/json-depth';
import { installOverloadProtection } from './http/overload.hook';
import { installSecurityHeaders } from './common/http/security-headers.hook';
import { requestIdFor } from './common/http/request-id';
import { pinoParams, QuietFrameworkLogger } from './common/logging';
import { installAccessLog } from './http/access-log.hook';
import type { AppConfig } from './config/config.schema';
import { MetricsService } from './health/metrics.service';
import { PROBE_PATHS } from './common/http/probe-paths';
import { ReadinessService } from './health/readiness.service';
import { setupSwagger } from './openapi/openapi.setup';

/**
 * The Fastify adapter with one change: the body parsers that Nest and Fastify register are
 * replaced by ours (see json-body.ts): only `application/json` in UTF-8, at most `bodyMaxDepth`
 * deep, is read, an empty (or whitespace-only) body is no body instead of a 400, and a body of any
 * other type (form, text, multipart, another charset) answers 415 UNSUPPORTED_MEDIA_TYPE.
 */
class AppFastifyAdapter extends FastifyAdapter {
  private parsersInstalled = false;
  /** BODY_MAX_DEPTH (issue 21 #5): set before init, which installs the parsers. */
  bodyMaxDepth = DEFAULT_JSON_MAX_DEPTH;
  /** IMPORT_MAX_BYTES (D53): the body limit of an import file. */
  importMaxBytes?: number;

  override registerParserMiddleware(prefix?: string, rawBody?: boolean): void {
    super.registerParserMiddleware(prefix, rawBody);
    if (this.parsersInstalled) return;
    installBodyParsers(this.getInstance(), rawBody === true, this.bodyMaxDepth, this.importMaxBytes);
    this.parsersInstalled = true;
  }
}

/**
 * Builds the application exactly as production runs it; main.ts and the e2e tests both call this.
 * Fastify options live here because they belong to the adapter, not to a module.
 */
export async function createApp(
  config: AppConfig,
  options: { logger?: boolean; extraModules?: Type[] } = {},
): Promise<NestFastifyApplication> {
  const adapter = new AppFastifyAdapter({
    bodyLimit: config.api.bodyLimitBytes,
    // request.ip is the client's address: X-Forwarded-For is believed from these peers only.
    trustProxy: config.api.trustProxy,
    // D19: keep a sane client x-request-id, else generate one; stored on the raw request for pino-http.
    genReqId: (req: IncomingMessage) => {
      const id = requestIdFor(req);
      (req as typeof req & { id?: string }).id = id;
      return id;
    },
    forceCloseConnections: 'idle',
    // No Nest middleware is mounted (the access line is a Fastify hook): without @fastify/middie
    // no request pays for walking an empty middleware chain.
    skipMiddie: true,
    return503OnClosing: true,
    // Answers Fastify and Node give before any route or filter runs, in the error envelope too:
    // undecodable or over-long path parameters (400, 414), and what Node's HTTP parser refuses
    // (malformed request 400, head over maxHeaderSize 431 / request line 414, timeout 408).
    frameworkErrors: frameworkErrorHandler,
    clientErrorHandler,
  });
  adapter.bodyMaxDepth = config.api.bodyMaxDepth;
  adapter.importMaxBytes = config.imports.maxBytes;
  const app = await NestFactory.create<NestFastifyApplication>(
    AppModule.forRoot(config, options.extraModules),
    adapter,
    {
      bufferLogs: true,
      abortOnError: false,
      logger: options.logger === false ? false : undefined,
    },
  );
  if (options.logger !== false) app.useLogger(new QuietFrameworkLogger(app.get(Logger)));
  // D44: the first request hook after the Fastify adapter's own (the modules' come at init), so a
  // preflight is answered (204) even while the readiness gate holds, and the gate's 503 and every
  // error envelope carry the CORS headers of an allowed origin.
  installCors(app.getHttpAdapter().getInstance(), config.cors);
  // Issue 21 #6: helmet's headers, the HTML pages' CSP, HSTS over TLS, Cache-Control: no-store, on
  // every answer after CORS's preflights, the readiness gate's and load shedding's 503s included;
  // not on the probes, which no browser renders.
  installSecurityHeaders(app.getHttpAdapter().getInstance(), config.securityHeaders, (url) =>
    url === undefined ? false : PROBE_PATHS.has(url),
  );
  // Issue 13 #6: 503 OVERLOADED under event-loop pressure, probes exempt; its hook runs after CORS's.
  const shed = new Counter({
    name: 'http_requests_shed_total',
    help: 'Requests answered 503 OVERLOADED under event-loop pressure, by signal',
    labelNames: ['reason'],
    registers: [app.get(MetricsService).registry],
  });
  const readiness = app.get(ReadinessService);
  installOverloadProtection(app.getHttpAdapter().getInstance(), config.overload, {
    onShed: (reason) => shed.inc({ reason }),
    shedding: () => readiness.ready,
  });
  installAccessLog(app.getHttpAdapter().getInstance(), pinoParams(config));
  // D53: an import's multipart `file` part, streamed; every other route refuses multipart (415).
  await installMultipart(app.getHttpAdapter().getInstance(), config.imports.maxBytes);
  // Routes are registered at init; the hook must be in place before that.
  installEnvelope(app, envelopedRoutes(app));
  installDirectRoutes(app);
  setupSwagger(app);
  return app;
}
