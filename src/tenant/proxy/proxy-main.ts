/**
 * `npm run proxy`: the tenant reverse proxy (D7). Maps `<tenant_code>.PROXY_BASE_DOMAIN` to the
 * tenant id (app_tenants on the configured database), injects the encrypted x-tenant-id and
 * forwards to PROXY_UPSTREAM, else to the service started from the same directory (wherever it
 * listens), else to API_HOST:API_PORT. Same configuration (.env, ./data/.dev-secrets.json) as
 * `npm start`.
 */
import { pinoBaseOptions } from '../../common/logging';
import { configOrExit } from '../../config/environment';
import { FollowedUpstream } from './followed-upstream';
import { DatabaseTenantSource, TenantDirectory } from './tenant-directory';
import { buildTenantProxy } from './tenant-proxy';

async function main(): Promise<void> {
  const config = configOrExit();
  const { proxy } = config;
  const source = new DatabaseTenantSource(config.db);
  const directory = new TenantDirectory(source.lookup, {
    ttlMs: proxy.tenantCacheTtlS * 1000,
    missTtlMs: proxy.tenantMissTtlS * 1000,
  });
  const followed = proxy.followService ? new FollowedUpstream(proxy.upstream) : undefined;
  const app = await buildTenantProxy({
    upstream: followed ? () => followed.current() : proxy.upstream,
    baseDomain: proxy.baseDomain,
    tenantEncryptionKey: config.crypto.tenantEncryptionKey,
    resolveTenant: (code) => directory.resolve(code),
    logger: pinoBaseOptions(config),
  });
  await app.listen({ host: proxy.host, port: proxy.port });

  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : proxy.port;
  // A loopback or wildcard bind is shown as localhost: the form <tenant_code>.localhost takes.
  const shownHost = ['0.0.0.0', '::', '127.0.0.1', '::1'].includes(proxy.host) ? 'localhost' : proxy.host;
  const database = config.db.type === 'sqlite' ? config.db.name : `${config.db.name}@${config.db.host}`;
  const target = followed ? followed.describe() : proxy.upstream;
  process.stdout.write(
    `Tenant proxy http://${shownHost}:${port} -> ${target} ` +
      `(tenant from Host <tenant_code>.${proxy.baseDomain}, looked up in ${config.db.type} ${database})\n`,
  );

  let closing = false;
  const shutdown = (signal: string): void => {
    if (closing) return;
    closing = true;
    app.log.info(`${signal} received: shutting down`);
    const timer = setTimeout(() => {
      process.stderr.write('Tenant proxy: shutdown timed out; exiting\n');
      process.exit(1);
    }, config.api.shutdownTimeoutMs);
    timer.unref();
    app
      .close()
      .then(() => source.close())
      .then(
        () => process.exit(0),
        (err: unknown) => {
          process.stderr.write(`Tenant proxy: shutdown failed: ${String(err)}\n`);
          process.exit(1);
        },
      );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  process.stderr.write(
    `Tenant proxy start-up failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});
