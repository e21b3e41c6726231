import { errorMessage } from './common/errors/error-message';
import { Logger } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { AppConfig } from './config/config.schema';
import { forgetServiceAddress } from './config/service-address';
import { HttpDrainService } from './health/http-drain.service';
import { ReadinessService } from './health/readiness.service';
import { StartupService } from './health/startup.service';

/**
 * Graceful shutdown of the service process on SIGTERM or SIGINT (issue 20 #5):
 *
 * 1. `/readyz` turns 503 and the workflow worker claims no more steps (both follow readiness);
 * 2. the HTTP drain (HttpDrainService, at most SHUTDOWN_DRAIN_MS): requests received before the
 *    signal finish, later ones get 503 NOT_READY with `Connection: close`, keep-alive connections
 *    close, then the listener;
 * 3. the application closes: the workflow worker waits for the steps it runs (before any pool
 *    closes), then the cache, the database pools and the connections;
 * 4. one `shutdown complete` line with the figures, and exit code 0 — or 1 when the whole
 *    shutdown outlasts SHUTDOWN_TIMEOUT_MS or fails.
 *
 * The drain runs before `app.close()` because Nest closes the modules first (their event
 * subscriptions, the cache invalidation among them) and the HTTP server last.
 */
export function exitGracefullyOnSignals(app: NestFastifyApplication, config: AppConfig): void {
  const logger = new Logger('Shutdown');
  const { shutdownTimeoutMs, shutdownDrainMs } = config.api;
  let closing = false;

  const shutdown = (signal: NodeJS.Signals): void => {
    // Repeats are ignored, not left to the default action (exit at once): one Ctrl-C under
    // `npm start` may arrive twice, from the terminal and forwarded by npm. SHUTDOWN_TIMEOUT_MS
    // bounds the wait.
    if (closing) return;
    closing = true;
    const started = Date.now();
    logger.log(
      `${signal} received: shutting down (HTTP drain at most ${shutdownDrainMs} ms, everything at most ${shutdownTimeoutMs} ms)`,
    );
    app.get(ReadinessService).markShuttingDown();
    app.get(StartupService).stop();
    const timer = setTimeout(() => {
      logger.error(`Shutdown did not finish within ${shutdownTimeoutMs} ms (SHUTDOWN_TIMEOUT_MS); exiting`);
      process.exit(1);
    }, shutdownTimeoutMs);
    timer.unref();

    const run = async (): Promise<void> => {
      const drain = await app.get(HttpDrainService).drain(shutdownDrainMs);
      forgetServiceAddress();
      await app.close();
      logger.log(
        {
          event: 'service.shutdown',
          signal,
          durationMs: Date.now() - started,
          drainMs: drain.durationMs,
          connectionsAtSignal: drain.connectionsAtSignal,
          servedDuringDrain: drain.inFlightAtSignal + drain.admitted,
          refusedDuringDrain: drain.refused,
          cutShortDuringDrain: drain.cutShort,
          forcedConnections: drain.forced,
        },
        'shutdown complete',
      );
    };
    run().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error(`Shutdown failed: ${errorMessage(err)}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}
