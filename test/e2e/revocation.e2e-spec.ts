import bcrypt from 'bcryptjs';
import jwt from 'jsonwebtoken';
import { RevocationPurgeService } from '../../src/auth/revocation-purge.service';
import { RevocationService } from '../../src/auth/revocation.service';
import { RevocationsRepository } from '../../src/auth/revocations.repository';
import { CacheService } from '../../src/cache/cache.service';
import { DatabaseService } from '../../src/database/database.service';
import { authHeaders, DEMO_PASSWORD, signin, TENANT } from '../support/auth';
import { startTestApp, TestApp } from '../support/test-app';
import { TEST_SECRETS } from '../support/test-database';

const PROFILE = '/api/v1/auth/profile';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Claims extends jwt.JwtPayload {
  jti: string;
  iat: number;
  iat_ms: number;
  exp: number;
  user_id: number;
}

/** D14, D46: revocations are kept in the configuration database, the cache only in front. */
describe('Token revocation (D14, D46)', () => {
  let t: TestApp;
  let cache: CacheService;

  beforeAll(async () => {
    t = await startTestApp({ label: 'revocation' });
    cache = t.app.get(CacheService);
  });

  afterAll(async () => {
    await t?.close();
  });

  const claimsOf = (token: string) => jwt.decode(token) as Claims;
  const profile = (token: string) =>
    t.app.inject({ method: 'GET', url: PROFILE, headers: authHeaders(TENANT.acme, token) });
  const logout = (token: string) =>
    t.app.inject({ method: 'POST', url: '/api/v1/auth/logout', headers: authHeaders(TENANT.acme, token) });
  const answer = async (res: Promise<{ statusCode: number; json(): any }>) => {
    const r = await res;
    return { status: r.statusCode, code: r.statusCode === 200 ? undefined : r.json().error?.code };
  };
  /** Every cache entry of this app: what a restart of Redis (or of the process) loses. */
  const wipeCache = () => cache.deletePattern(cache.keys.all());
  const rows = (where: string, params: Record<string, unknown>) =>
    t.app
      .get(DatabaseService)
      .dataSource.createQueryBuilder()
      .select(['r.rvk_tenant_id AS tenant_id', 'r.rvk_user_id AS user_id', 'r.rvk_jti AS jti'])
      .addSelect('r.rvk_not_before', 'not_before')
      .from('app_revoked_tokens', 'r')
      .where(where, params)
      .getRawMany<Record<string, unknown>>();

  describe('logout', () => {
    it('should record the revocation in the database and refuse the token after the cache is wiped', async () => {
      const { token, body } = await signin(t.app, TENANT.acme, 'admin@acme.test');
      expect(await answer(profile(token))).toEqual({ status: 200, code: undefined });
      expect((await logout(token)).statusCode).toBe(200);

      const { jti } = claimsOf(token);
      const stored = await rows('r.rvk_jti = :jti', { jti });
      expect(stored).toHaveLength(1);
      expect(stored[0]).toMatchObject({ jti, not_before: null });
      expect([Number(stored[0].tenant_id), Number(stored[0].user_id)]).toEqual([1, body.data.user_id]);

      await wipeCache();
      expect(await cache.getJson(cache.keys.revokedToken(jti))).toBeUndefined();
      expect(await answer(profile(token))).toEqual({ status: 401, code: 'TOKEN_REVOKED' });
      // The database's answer is cached again: the next request is refused from the cache.
      expect(await cache.getJson(cache.keys.revokedToken(jti))).toBe(true);
      expect(await answer(profile(token))).toEqual({ status: 401, code: 'TOKEN_REVOKED' });
    });

    it('should overwrite a cached "not revoked" answer', async () => {
      const { token } = await signin(t.app, TENANT.acme, 'admin@acme.test');
      await wipeCache();
      expect(await answer(profile(token))).toEqual({ status: 200, code: undefined });
      expect(await cache.getJson(cache.keys.revokedToken(claimsOf(token).jti))).toBe(false);
      expect((await logout(token)).statusCode).toBe(200);
      expect(await answer(profile(token))).toEqual({ status: 401, code: 'TOKEN_REVOKED' });
    });

    it('should keep other tokens of the same user valid', async () => {
      const first = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
      const second = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
      expect((await logout(first)).statusCode).toBe(200);
      await wipeCache();
      expect(await answer(profile(first))).toEqual({ status: 401, code: 'TOKEN_REVOKED' });
      expect(await answer(profile(second))).toEqual({ status: 200, code: undefined });
    });
  });

  describe('revokeUserTokens', () => {
    /** Waits until the current second has at least 700 ms left, so a few steps share it. */
    async function earlyInASecond(): Promise<void> {
      while (Date.now() % 1000 > 300) await sleep(5);
    }

    it('should refuse tokens issued before it and accept those issued after, within one second too', async () => {
      const revocations = t.app.get(RevocationService);
      let sameSecond = 0;
      // A loaded machine may take a second per sign-in: keep trying until one round fits in a second.
      for (let attempt = 0; attempt < 15 && sameSecond === 0; attempt++) {
        await earlyInASecond();
        const before = await signin(t.app, TENANT.acme, 'viewer@acme.test');
        const userId = Number(before.body.data.user_id);
        const issued = claimsOf(before.token);
        expect(Math.floor(issued.iat_ms / 1000)).toBe(issued.iat);
        const atMs = issued.iat_ms + 1;
        while (Date.now() < atMs) await sleep(1);
        await revocations.revokeUserTokens(TENANT.acme, userId, atMs);

        const after = await signin(t.app, TENANT.acme, 'viewer@acme.test');
        expect(await answer(profile(before.token))).toEqual({ status: 401, code: 'TOKEN_REVOKED' });
        expect(await answer(profile(after.token))).toEqual({ status: 200, code: undefined });
        // The database is the record: the same answers with an empty cache.
        await wipeCache();
        expect(await answer(profile(before.token))).toEqual({ status: 401, code: 'TOKEN_REVOKED' });
        expect(await answer(profile(after.token))).toEqual({ status: 200, code: undefined });

        const stored = await rows('r.rvk_user_id = :userId AND r.rvk_jti IS NULL', { userId });
        expect(stored.length).toBeGreaterThan(0);
        if (claimsOf(after.token).iat === issued.iat) sameSecond++;
      }
      // At least one round had both tokens (and the revocation) in the same second of `iat`.
      expect(sameSecond).toBeGreaterThan(0);
    });

    it('should compare a token without iat_ms by iat (whole seconds), and refuse an inconsistent iat_ms', async () => {
      const { token, body } = await signin(t.app, TENANT.acme, 'root@acme.test');
      const userId = Number(body.data.user_id);
      const { iat: _iat, iat_ms: _iatMs, exp: _exp, ...rest } = claimsOf(token);
      const forge = (claims: object) =>
        jwt.sign({ ...rest, ...claims }, TEST_SECRETS.JWT_SECRET, { algorithm: 'HS256', expiresIn: 600 });
      await earlyInASecond();
      const atMs = Date.now() + 1;
      while (Date.now() < atMs) await sleep(1);
      await t.app.get(RevocationService).revokeUserTokens(TENANT.acme, userId, atMs);
      const second = Math.floor(atMs / 1000);

      // Issued "in the second of the revocation" without ms: counted as its start, so refused.
      expect(await answer(profile(forge({ iat: second })))).toEqual({ status: 401, code: 'TOKEN_REVOKED' });
      expect(await answer(profile(forge({ iat: second + 1 })))).toEqual({ status: 200, code: undefined });
      expect(await answer(profile(forge({ iat: second, iat_ms: atMs })))).toEqual({
        status: 200,
        code: undefined,
      });
      expect(await answer(profile(forge({ iat: second, iat_ms: atMs - 1 })))).toEqual({
        status: 401,
        code: 'TOKEN_REVOKED',
      });
      // iat_ms must lie within the second `iat` names.
      for (const iatMs of [atMs + 1000, atMs - 1000, String(atMs), 1.5]) {
        expect(await answer(profile(forge({ iat: second, iat_ms: iatMs })))).toEqual({
          status: 401,
          code: 'TOKEN_INVALID',
        });
      }
    });

    it('should write the row inside the caller transaction: nothing is revoked when it rolls back', async () => {
      const { token, body } = await signin(t.app, TENANT.acme, 'admin@acme.test');
      const userId = Number(body.data.user_id);
      const runner = t.app.get(DatabaseService).dataSource.createQueryRunner();
      try {
        await runner.startTransaction();
        await t.app.get(RevocationService).revokeUserTokens(TENANT.acme, userId, Date.now() + 1, runner);
        await runner.rollbackTransaction();
      } finally {
        await runner.release();
      }
      await wipeCache();
      expect(await answer(profile(token))).toEqual({ status: 200, code: undefined });
    });
  });

  describe('sign-in rehash (D12)', () => {
    it('should not revoke anything when a bcrypt hash is replaced with argon2id', async () => {
      const earlier = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
      const ds = t.app.get(DatabaseService).dataSource;
      const setHash = (hash: string) =>
        ds
          .createQueryBuilder()
          .update('app_users')
          .set({ usr_password_hash: hash })
          .where('usr_tenant_id = :tenantId AND usr_id = :userId', { tenantId: 1, userId: 1 })
          .execute();
      await setHash(bcrypt.hashSync(DEMO_PASSWORD, 4));
      const later = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
      const stored = await ds
        .createQueryBuilder()
        .select('u.usr_password_hash', 'hash')
        .from('app_users', 'u')
        .where('u.usr_id = :userId', { userId: 1 })
        .getRawOne<{ hash: string }>();
      expect(stored?.hash).toMatch(/^\$argon2id\$/);
      await wipeCache();
      expect(await answer(profile(earlier))).toEqual({ status: 200, code: undefined });
      expect(await answer(profile(later))).toEqual({ status: 200, code: undefined });
    });
  });

  describe('purge', () => {
    it('should delete the rows whose tokens have expired and keep the others', async () => {
      const repo = t.app.get(RevocationsRepository);
      const now = Date.now();
      const row = (jti: string | null, notBeforeMs: number | null, expiresAtMs: number) => ({
        tenantId: TENANT.acme,
        userId: 99,
        jti,
        notBeforeMs,
        expiresAtMs,
        createdAtMs: now - 86_400_000,
      });
      await repo.insert(row('purge-expired-1', null, now - 1000));
      await repo.insert(row(null, now - 2000, now - 1000));
      await repo.insert(row('purge-live-1', null, now + 3_600_000));
      await repo.insert(row(null, now - 86_400_000, now + 3_600_000));
      // An expired user-wide row no longer counts, even before it is purged (ms precision kept).
      expect(await repo.userNotBefore(TENANT.acme, 99, now)).toBe(now - 86_400_000);

      await t.app.get(RevocationPurgeService).purge(now);

      const left = await rows('r.rvk_user_id = :userId', { userId: 99 });
      expect(left.map((r) => r.jti).sort()).toEqual([null, 'purge-live-1'].sort());
    });
  });

  describe('when the database cannot store the revocation', () => {
    it('should answer logout with 500 SERVICE_ERROR and leave the token usable (runs last: drops the table)', async () => {
      const { token } = await signin(t.app, TENANT.acme, 'viewer@acme.test');
      // Cached "not revoked" and user state, so the guard needs no database for this token.
      expect(await answer(profile(token))).toEqual({ status: 200, code: undefined });
      await t.app.get(DatabaseService).dataSource.query('DROP TABLE app_revoked_tokens');

      const out = await logout(token);
      expect({
        status: out.statusCode,
        code: out.json().error?.code,
        message: out.json().error?.message,
      }).toEqual({
        status: 500,
        code: 'SERVICE_ERROR',
        message: 'Logout could not be recorded; try again',
      });
      expect(await cache.getJson(cache.keys.revokedToken(claimsOf(token).jti))).toBe(false);
      expect(await answer(profile(token))).toEqual({ status: 200, code: undefined });
    });
  });
});
