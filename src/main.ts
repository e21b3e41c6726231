import 'reflect-metadata';
import { renderBanner } from './banner';
import { createApp } from './bootstrap';
import { CacheService } from './cache/cache.service';
import { configOrExit } from './config/environment';
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

  exitGracefullyOnSignals(app, config);
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
