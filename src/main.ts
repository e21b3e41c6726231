import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { isIPv6 } from 'node:net';
import { renderBanner } from './banner';
import { createApp } from './bootstrap';
import { CacheService } from './cache/cache.service';
import { configOrExit } from './config/environment';
import { localUrlFor, recordServiceAddress, SERVICE_ADDRESS_FILE } from './config/service-address';
import { DatabaseService } from './database/database.service';
import { DEMO_BANNER_USERS, DEV_DEMO_PASSWORD } from './database/seed/demo-data';
import { exitGracefullyOnSignals } from './shutdown';

async function main(): Promise<void> {
  const config = configOrExit();
  const app = await createApp(config);
  await app.listen({ port: config.api.port, host: config.api.host });

  const address = app.getHttpServer().address();
  const port = typeof address === 'object' && address ? address.port : config.api.port;
  const url = config.api.publicUrl ?? `http://localhost:${port}`;
  if (!config.isProduction) {
    // For `npm run proxy` from the same directory (issue 20 #7); it works without, on API_PORT.
    try {
      recordServiceAddress(localUrlFor(config.api.host, port));
    } catch (err) {
      new Logger('Main').warn(`${SERVICE_ADDRESS_FILE} not written: ${String(err)}`);
    }
  }
  const database = app.get(DatabaseService);
  const cache = app.get(CacheService);
  process.stdout.write(
    renderBanner({
      config,
      url,
      listening: listeningOn(config.api.host, port),
      database: database.describe(),
      cache: cache.kind === 'redis' ? `redis ${redactUrl(config.cache.url)}` : 'in-process',
      demoUsers: config.demo.seed ? DEMO_BANNER_USERS : undefined,
      demoPassword: config.demo.password ? '(DEMO_PASSWORD)' : DEV_DEMO_PASSWORD,
    }) + '\n',
  );

  exitGracefullyOnSignals(app, config);
}

/** The bind address for the banner, and whether other machines can reach it (issue 20 #6). */
function listeningOn(host: string, port: number): string {
  const where = isIPv6(host) ? `[${host}]:${port}` : `${host}:${port}`;
  if (host === '0.0.0.0' || host === '::') return `${where} (every interface)`;
  if (host === '127.0.0.1' || host === '::1' || host === 'localhost') {
    return `${where} (this machine only; API_HOST=0.0.0.0 exposes it)`;
  }
  return where;
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
