import { httpStatusOf } from '../../src/common/errors/error-codes';
import type { ExecutionContext } from '@nestjs/common';
import jwt from 'jsonwebtoken';
import type { DataSource } from 'typeorm';
import { AuthController } from '../../src/auth/auth.controller';
import { JwtAuthGuard } from '../../src/auth/jwt-auth.guard';
import { CacheService } from '../../src/cache/cache.service';
import { AppError } from '../../src/common/errors/app-error';
import type { TenantContext } from '../../src/common/request-context';
import { createDataSource } from '../../src/database/data-source.factory';
import { DatabaseService } from '../../src/database/database.service';
import { authHeaders, signin, TENANT } from '../support/auth';
import { ProxiedTestApp, startProxiedTestApp } from '../support/proxied-test-app';
import { RedisServer } from '../support/redis-server';
import { waitFor } from '../support/test-app';
import { testDialect } from '../support/test-database';

const PROFILE = '/api/v1/auth/profile';
const ACME: TenantContext = { id: TENANT.acme, code: 'acme', name: 'Acme Corporation', features: {} };

/**
 * Issue 9, finding 2: revoked tokens fail closed. The app runs on a redis-server of this test (so
 * it can be stopped and restarted empty) and, on PostgreSQL and MariaDB, reaches its database
 * through a TCP proxy of this test (so the database can become unreachable for this app only).
 * Revocations are kept in the database (D46): with the cache gone they are read from there, and
 * when neither can say, the answer is 503 DATABASE_UNAVAILABLE, never an accepted token.
 */
describe('Revoked tokens fail closed: cache and database outages (D14, D46; issue 9 finding 2)', () => {
  const dialect = testDialect();
  let redis: RedisServer;
  let t: ProxiedTestApp;
  let cache: CacheService;
  /** admin@acme.test, logged out: revoked. */
  let revoked: string;
  /** viewer@acme.test: valid throughout. */
  let valid: string;

  beforeAll(async () => {
    redis = await RedisServer.start();
    t = await startProxiedTestApp({ label: 'revocation-outage', env: { CACHE_URL: redis.url } });
    cache = t.app.get(CacheService);
    revoked = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    valid = (await signin(t.app, TENANT.acme, 'viewer@acme.test')).token;
  });

  afterAll(async () => {
    await t?.close();
    await redis?.stop();
  });

  const answer = async (token: string) => {
    const res = await t.app.inject({ method: 'GET', url: PROFILE, headers: authHeaders(TENANT.acme, token) });
    return {
      status: res.statusCode,
      code: res.statusCode === 200 ? undefined : res.json().error?.code,
      retryAfter: res.headers['retry-after'],
    };
  };
  const ok = { status: 200, code: undefined, retryAfter: undefined };
  const refused = { status: 401, code: 'TOKEN_REVOKED', retryAfter: undefined };
  const unavailable = { status: 503, code: 'DATABASE_UNAVAILABLE', retryAfter: '5' };
  const jtiOf = (token: string) => (jwt.decode(token) as jwt.JwtPayload).jti as string;
  const cacheUp = async () => (await cache.ping().catch(() => '')) === 'PONG';
  const startRedis = async () => {
    await redis.start();
    // ioredis reconnects in the background (backoff up to 5 s).
    await waitFor(cacheUp, 20000, 50);
  };
  const stopRedis = async () => {
    await redis.stop();
    await waitFor(async () => !(await cacheUp()), 5000, 20);
  };

  describe('Redis stopped, then back empty (every dialect)', () => {
    it('should refuse a logged-out token and accept a valid one while Redis is stopped', async () => {
      expect(await answer(revoked)).toEqual(ok);
      const out = await t.app.inject({
        method: 'POST',
        url: '/api/v1/auth/logout',
        headers: authHeaders(TENANT.acme, revoked),
      });
      expect(out.statusCode).toBe(200);
      expect(await answer(revoked)).toEqual(refused);
      expect(await answer(valid)).toEqual(ok);

      await stopRedis();
      expect(await answer(revoked)).toEqual(refused);
      expect(await answer(valid)).toEqual(ok);
    });

    it('should still refuse it once Redis is back without its data, and cache that again', async () => {
      await startRedis();
      // A write the service sent while Redis was down may be replayed by ioredis' offline queue on
      // reconnect (it would put back the right value): the key is dropped so Redis is really empty.
      await cache.delete([cache.keys.revokedToken(jtiOf(revoked)), cache.keys.revokedToken(jtiOf(valid))]);
      expect(await cache.getJson(cache.keys.revokedToken(jtiOf(revoked)))).toBeUndefined();
      expect(await answer(revoked)).toEqual(refused);
      expect(await cache.getJson(cache.keys.revokedToken(jtiOf(revoked)))).toBe(true);
      expect(await answer(valid)).toEqual(ok);
      expect(await cache.getJson(cache.keys.revokedToken(jtiOf(valid)))).toBe(false);
    });
  });

  if (dialect === 'sqlite') {
    describe('the database as well (SQLite: a file of the process, it cannot become unreachable)', () => {
      it('should answer the token checks from the database file while Redis is stopped and a writer holds its lock', async () => {
        // SQLite's outage is a write lock held elsewhere (SQLITE_BUSY); token checks only read,
        // and WAL lets readers run beside the writer, so they are still answered.
        const other: DataSource = createDataSource(t.db.config);
        await other.initialize();
        const runner = other.createQueryRunner();
        try {
          await runner.query('BEGIN IMMEDIATE');
          await stopRedis();
          expect(await answer(revoked)).toEqual(refused);
          expect(await answer(valid)).toEqual(ok);
        } finally {
          await runner.query('ROLLBACK');
          await runner.release();
          await other.destroy();
          await startRedis();
        }
      });
    });
  } else {
    describe(`the database unreachable too (${dialect}, through the proxy)`, () => {
      /** JwtAuthGuard alone on the profile route, for a request TenantGuard has passed. */
      const guardVerdict = async (token: string): Promise<unknown> => {
        const request = { headers: { authorization: `Bearer ${token}` }, tenant: ACME, raw: {} };
        const context = {
          getHandler: () => AuthController.prototype.profile,
          getClass: () => AuthController,
          switchToHttp: () => ({ getRequest: () => request }),
        } as unknown as ExecutionContext;
        try {
          return await t.app.get(JwtAuthGuard).canActivate(context);
        } catch (err) {
          return err instanceof AppError
            ? { status: httpStatusOf(err.code), code: err.code, retryAfter: err.headers['Retry-After'] }
            : err;
        }
      };
      let fresh: string;

      it('should refuse a token the cache knows as revoked, and answer 503 where the cache cannot say', async () => {
        fresh = (await signin(t.app, TENANT.acme, 'viewer@acme.test')).token;
        expect(await answer(fresh)).toEqual(ok);
        expect(await answer(revoked)).toEqual(refused);
        // The cache knows the revoked token (true), and nothing about the fresh one.
        await cache.delete([
          cache.keys.revokedToken(jtiOf(fresh)),
          cache.keys.userState(TENANT.acme, 1),
          cache.keys.userState(TENANT.acme, 2),
        ]);

        await t.proxy!.cut();
        await expect(t.app.get(DatabaseService).dataSource.query('SELECT 1')).rejects.toBeDefined();
        expect(await answer(revoked)).toEqual(refused);
        expect(await answer(fresh)).toEqual(unavailable);
        expect(await answer(fresh)).toEqual(unavailable);
        // Nothing was cached from a failed lookup.
        expect(await cache.getJson(cache.keys.revokedToken(jtiOf(fresh)))).toBeUndefined();
      });

      it('should answer 503 DATABASE_UNAVAILABLE with Redis stopped as well, and never accept a token', async () => {
        await stopRedis();
        for (const token of [revoked, valid, fresh]) {
          expect(await answer(token)).toEqual(unavailable);
          // The token check itself (TenantGuard, which runs first, needs the database too).
          expect(await guardVerdict(token)).toEqual({
            status: 503,
            code: 'DATABASE_UNAVAILABLE',
            retryAfter: '5',
          });
        }
      });

      it('should answer as before once the database and Redis are back', async () => {
        await t.proxy!.restore();
        await startRedis();
        await waitFor(async () => (await answer(valid)).status === 200, 20000, 100);
        expect(await answer(revoked)).toEqual(refused);
        expect(await answer(fresh)).toEqual(ok);
        expect(await guardVerdict(revoked)).toEqual({
          status: 401,
          code: 'TOKEN_REVOKED',
          retryAfter: undefined,
        });
        expect(await guardVerdict(valid)).toBe(true);
      });
    });
  }
});
