import type { IncomingMessage } from 'node:http';
import type { Type } from '@nestjs/common';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { NestFactory } from '@nestjs/core';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { Logger } from 'nestjs-pino';
import { AppModule } from './app.module';
import { BEARER_SCHEME, TENANT_HEADER_SCHEME } from './common/http/api-docs';
import { envelopedRoutes, installEnvelope } from './common/http/envelope.hook';
import { requestIdFor } from './common/http/request-id';
import { QuietFrameworkLogger } from './common/logging';
import type { AppConfig } from './config/config.schema';

/**
 * Builds the application exactly as production runs it; main.ts and the e2e tests both call this.
 * Fastify options live here because they belong to the adapter, not to a module.
 */
export async function createApp(
  config: AppConfig,
  options: { logger?: boolean; extraModules?: Type[] } = {},
): Promise<NestFastifyApplication> {
  const adapter = new FastifyAdapter({
    bodyLimit: config.api.bodyLimitBytes,
    // D19: keep a sane client x-request-id, else generate one; stored on the raw request for pino-http.
    genReqId: (req: IncomingMessage) => {
      const id = requestIdFor(req);
      (req as typeof req & { id?: string }).id = id;
      return id;
    },
    forceCloseConnections: 'idle',
    return503OnClosing: true,
  });
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
  // Routes are registered at init; the hook must be in place before that.
  installEnvelope(app, envelopedRoutes(app));
  setupSwagger(app);
  return app;
}

export function setupSwagger(app: NestFastifyApplication): void {
  const document = SwaggerModule.createDocument(
    app,
    new DocumentBuilder()
      .setTitle('Multi-tenant configuration-driven backend')
      .setDescription(
        'Every tenant-scoped route needs the encrypted `x-tenant-id` header; protected routes also a Bearer JWT. ' +
          'Success bodies are `{success, data, meta}`; errors `{success: false, message, error: {code, message, details}, meta}`.',
      )
      .setVersion('1')
      .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' }, BEARER_SCHEME)
      .addApiKey(
        {
          type: 'apiKey',
          in: 'header',
          name: 'x-tenant-id',
          description: 'Encrypted tenant header (spec §2.11)',
        },
        TENANT_HEADER_SCHEME,
      )
      .build(),
  );
  SwaggerModule.setup('api-docs', app, document, { jsonDocumentUrl: 'api-docs/json' });
}
