/**
 * `npm run seed:demo` runs this after the seed (issue 34 #11): a service running beside it on
 * Redis remembers tenant ids it did not know (a 404 "Tenant not found") — this drops every cached
 * tenant entry on that Redis and, through the cache's invalidation channel, in every instance's
 * local tier, so the tenants the seed created are found at once. On the in-process cache there is
 * nothing a separate process can reach: the service forgets an unknown tenant within
 * UNKNOWN_TENANT_TTL_S seconds.
 */
import { CacheService } from '../../cache/cache.service';
import { errorMessage } from '../../common/errors/error-message';
import { configFromProcessEnv } from '../../config/environment';
import { UNKNOWN_TENANT_TTL_S } from '../tenant-lookup.service';

const out = (msg: string): void => void process.stdout.write(`${msg}\n`);

/** PING until the connection is up: commands fail fast while it is not (no offline queue). */
async function whenConnected(cache: CacheService, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await cache.ping();
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

async function main(): Promise<void> {
  const config = configFromProcessEnv();
  if (!config.cache.url) {
    out(`tenants-changed: in-process cache; a running service finds new tenants within ${UNKNOWN_TENANT_TTL_S} s`);
    return;
  }
  const cache = new CacheService(config);
  try {
    await whenConnected(cache, 5000);
    const dropped = await cache.deletePattern(`${cache.keys.prefix}:tenant:*`);
    // The drop's message to the other instances went out on this connection before this PING.
    await cache.ping();
    out(`tenants-changed: ${dropped} cached tenant entr${dropped === 1 ? 'y' : 'ies'} dropped on Redis`);
  } finally {
    await cache.onApplicationShutdown();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`tenants-changed failed: ${errorMessage(error)}\n`);
  process.exitCode = 1;
});
