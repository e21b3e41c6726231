import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { renderBanner } from './banner';
import { createApp } from './bootstrap';
import { CacheService } from './cache/cache.service';
import { configOrExit } from './config/environment';
import { DatabaseService } from './database/database.service';
import { DEMO_BANNER_USERS, DEV_DEMO_PASSWORD } from './database/seed/demo-data';
import { ReadinessService } from './health/readiness.service';
import { StartupService } from './health/startup.service';

async function main(): Promise<void> {
  const config = configOrExit();
  const app = await createApp(config);
  const logger = new Logger('Main');
  await app.listen({ port: config.api.port, host: config.api.host });

  const address = app.getHttpServer().address();
  const port = typeof address === 'object' && address ? address.port : config.api.port;
  const url = config.api.publicUrl ?? `http://localhost:${port}`;
  const database = app.get(DatabaseService);
  const cache = app.get(CacheService);
  process.stdout.write(
    renderBanner({
      config,
      url,
      database: database.describe(),
      cache: cache.kind === 'redis' ? `redis ${redactUrl(config.cache.url)}` : 'in-process',
      demoUsers: config.demo.seed ? DEMO_BANNER_USERS : undefined,
      demoPassword: config.demo.password ? '(DEMO_PASSWORD)' : DEV_DEMO_PASSWORD,
    }) + '\n',
  );

  // Graceful shutdown: stop readiness, stop accepting, finish in-flight requests, close pools,
  // and exit within SHUTDOWN_TIMEOUT_MS whatever happens.
  let closing = false;
  const shutdown = (signal: string): void => {
    if (closing) return;
    closing = true;
    logger.log(`${signal} received: shutting down (at most ${config.api.shutdownTimeoutMs} ms)`);
    app.get(ReadinessService).markShuttingDown();
    app.get(StartupService).stop();
    const timer = setTimeout(() => {
      logger.error('Shutdown timed out; exiting');
      process.exit(1);
    }, config.api.shutdownTimeoutMs);
    timer.unref();
    app.close().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error(`Shutdown failed: ${String(err)}`);
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
}

function redactUrl(url: string | undefined): string {
  return (url ?? '').replace(/\/\/([^@/]*)@/, '//***@');
}

main().catch((err: unknown) => {
  process.stderr.write(
    `Start-up failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});
