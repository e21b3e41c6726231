import bcrypt from 'bcryptjs';
import jwt from 'jsonwebtoken';
import { CacheService } from '../../src/cache/cache.service';
import { DatabaseService } from '../../src/database/database.service';
import { authHeaders, DEMO_PASSWORD, signin, TENANT, tenantHeader } from '../support/auth';
import { ProbeModule } from '../support/probe.module';
import { flipHex, forgeHeader } from '../support/tenant-header-forge';
import { startTestApp, TestApp } from '../support/test-app';
import { TEST_SECRETS } from '../support/test-database';

const KEY = TEST_SECRETS.TENANT_ENCRYPTION_KEY;
const OTHER_KEY = 'ab'.repeat(32);
const PROFILE = '/api/v1/auth/profile';
const TENANT_CONFIG = '/api/v1/auth/tenant-config';

/** Every row of spec §7 that concerns the tenant header or a token, each as its own test. */
describe('Tenant header and authentication (spec §5, §7, D5-D14)', () => {
  let t: TestApp;
  let adminToken: string;

  beforeAll(async () => {
    t = await startTestApp({ label: 'auth', extraModules: [ProbeModule] });
    adminToken = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
  });

  afterAll(async () => {
    await t?.close();
  });

  const get = (url: string, headers: Record<string, string>) => t.app.inject({ method: 'GET', url, headers });
  const sql = (query: string, params: unknown[] = []) =>
    t.app.get(DatabaseService).dataSource.query(query, params);
  const placeholder = (i: number) => (t.db.dialect === 'postgres' ? `$${i}` : '?');
  const bool = (v: boolean) => (t.db.dialect === 'postgres' ? String(v).toUpperCase() : v ? '1' : '0');

  function expectError(res: { statusCode: number; json(): any }, status: number, code: string): any {
    expect({ status: res.statusCode, code: res.json().error?.code }).toEqual({ status, code });
    expect(res.json().success).toBe(false);
    return res.json();
  }

  describe('x-tenant-id', () => {
    const withHeader = (value: string | undefined) =>
      get(TENANT_CONFIG, value === undefined ? {} : { 'x-tenant-id': value });

    it('should answer a missing header with 400 and details {x-tenant-id: required}', async () => {
      const body = expectError(await withHeader(undefined), 400, 'VALIDATION_ERROR');
      expect(body.error.details).toEqual({ 'x-tenant-id': 'required' });
    });

    it('should answer a plain (unencrypted) header with invalid_format_not_encrypted', async () => {
      const body = expectError(await withHeader('1'), 400, 'VALIDATION_ERROR');
      expect(body.error.details).toEqual({ 'x-tenant-id': 'invalid_format_not_encrypted' });
    });

    it.each(['ciphertext', 'nonce', 'salt'])(
      'should answer JSON without %s with invalid_format_not_encrypted',
      async (field) => {
        const value = forgeHeader(JSON.stringify({ type: 'tenant', id: '1' }), KEY);
        delete value[field];
        const body = expectError(await withHeader(JSON.stringify(value)), 400, 'VALIDATION_ERROR');
        expect(body.error.details).toEqual({ 'x-tenant-id': 'invalid_format_not_encrypted' });
      },
    );

    const decryptionFailures: Array<[string, () => string]> = [
      [
        'a header encrypted with another key',
        () => JSON.stringify(forgeHeader('{"type":"tenant","id":"1"}', OTHER_KEY)),
      ],
      [
        'a tampered ciphertext',
        () => {
          const v = forgeHeader('{"type":"tenant","id":"1"}', KEY);
          return JSON.stringify({ ...v, ciphertext: flipHex(v.ciphertext, 3) });
        },
      ],
      [
        'a tampered tag',
        () => {
          const v = forgeHeader('{"type":"tenant","id":"1"}', KEY);
          return JSON.stringify({ ...v, authTag: flipHex(v.authTag, 15) });
        },
      ],
      [
        'an 8-byte (truncated) tag',
        () => JSON.stringify(forgeHeader('{"type":"tenant","id":"1"}', KEY, { tagBytes: 8 })),
      ],
      ['a payload of another type', () => JSON.stringify(forgeHeader('{"type":"user","id":"1"}', KEY))],
      [
        'a non-numeric tenant id',
        () => JSON.stringify(forgeHeader('{"type":"tenant","id":"1 OR 1=1"}', KEY)),
      ],
      ['a payload that is not JSON', () => JSON.stringify(forgeHeader('tenant 1', KEY))],
      [
        'another algorithm',
        () => JSON.stringify(forgeHeader('{"type":"tenant","id":"1"}', KEY, { algorithm: 'aes-128-cbc' })),
      ],
    ];

    it.each(decryptionFailures)(
      "should answer %s with 400 'Failed to decrypt tenant ID'",
      async (_, make) => {
        const body = expectError(await withHeader(make()), 400, 'VALIDATION_ERROR');
        expect(body.error.message).toBe('Failed to decrypt tenant ID');
        expect(body.error.details).toEqual({ 'x-tenant-id': 'decryption_failed' });
      },
    );

    it('should accept a valid header and trim the decrypted id', async () => {
      const res = await withHeader(JSON.stringify(forgeHeader('{"type":"tenant","id":" 1 "}', KEY)));
      expect(res.statusCode).toBe(200);
      expect(res.json().data.tenant_id).toBe('1');
    });

    it('should answer an unknown tenant with 404 NOT_FOUND', async () => {
      expectError(await withHeader(tenantHeader(999)), 404, 'NOT_FOUND');
    });

    it('should answer an inactive tenant with 403 FORBIDDEN, for tenant-config and signin', async () => {
      expectError(await withHeader(tenantHeader(TENANT.initech)), 403, 'FORBIDDEN');
      expectError(
        await t.app.inject({
          method: 'POST',
          url: '/api/v1/auth/signin',
          headers: { 'x-tenant-id': tenantHeader(TENANT.initech) },
          payload: { email_id: 'staff@initech.test', password: DEMO_PASSWORD },
        }),
        403,
        'FORBIDDEN',
      );
    });
  });

  describe('tenant-config', () => {
    it("should return the header tenant's branding (spec §2.12, D11)", async () => {
      const res = await get(TENANT_CONFIG, { 'x-tenant-id': tenantHeader(TENANT.acme) });
      expect(res.statusCode).toBe(200);
      expect(res.json().data).toMatchObject({
        tenant_id: '1',
        tenant_name: 'Acme Corporation',
        colors: {
          primary: expect.any(String),
          secondary: expect.any(String),
          background: expect.any(String),
        },
        settings: { locale: 'en-US' },
      });
      const globex = (await get(TENANT_CONFIG, { 'x-tenant-id': tenantHeader(TENANT.globex) })).json().data;
      expect(globex.tenant_name).toBe('Globex Inc');
      expect(globex.features.export).toBe(false);
    });
  });

  describe('signin', () => {
    const post = (tenantId: string, payload: object) =>
      t.app.inject({
        method: 'POST',
        url: '/api/v1/auth/signin',
        headers: { 'x-tenant-id': tenantHeader(tenantId) },
        payload,
      });

    it('should return the fields of spec §2.13 inside the envelope', async () => {
      const res = await post(TENANT.acme, {
        email_id: 'Admin@Acme.test ',
        password: DEMO_PASSWORD,
        device_token: 'abc',
      });
      expect(res.statusCode).toBe(200);
      const data = res.json().data;
      expect(data).toMatchObject({
        user_id: 1,
        tenant_id: '1',
        expires_in: 86400,
        type: 'Bearer',
        message: expect.any(String),
      });
      expect(new Date(data.expires_at).getTime()).toBeGreaterThan(Date.now());
      expect(data.tenantSettings.tenant_name).toBe('Acme Corporation');
      const claims = jwt.decode(data.token, { complete: true }) as jwt.Jwt;
      expect(claims.header.alg).toBe('HS256');
      expect(claims.payload).toMatchObject({
        sub: '1',
        user_id: 1,
        email: 'admin@acme.test',
        tenant_id: '1',
        tennr: '1',
        role_id: 1,
        roles: ['ADMIN'],
        permissions: ['*:*'],
        jti: expect.any(String),
        iat: expect.any(Number),
        exp: expect.any(Number),
      });
    });

    it('should list each missing field as required', async () => {
      const body = expectError(await post(TENANT.acme, {}), 400, 'VALIDATION_ERROR');
      expect(body.error.details).toEqual([
        { field: 'email_id', error: 'required' },
        { field: 'password', error: 'required' },
      ]);
    });

    it('should answer a wrong password and an unknown e-mail alike: 401 INVALID_CREDENTIALS', async () => {
      const wrong = expectError(
        await post(TENANT.acme, { email_id: 'admin@acme.test', password: 'nope' }),
        401,
        'INVALID_CREDENTIALS',
      );
      const unknown = expectError(
        await post(TENANT.acme, { email_id: 'nobody@acme.test', password: 'nope' }),
        401,
        'INVALID_CREDENTIALS',
      );
      expect(unknown.error.message).toBe(wrong.error.message);
    });

    it('should spend about the same time on an unknown e-mail as on a wrong password (D12)', async () => {
      // admin@globex.test: its failures are reset by the successful sign-ins of the bcrypt test below.
      const time = async (email: string) => {
        const start = process.hrtime.bigint();
        await post(TENANT.globex, { email_id: email, password: 'not-the-password' });
        return Number(process.hrtime.bigint() - start) / 1e6;
      };
      const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
      const wrong: number[] = [];
      const unknown: number[] = [];
      for (let i = 0; i < 3; i++) {
        wrong.push(await time('admin@globex.test'));
        unknown.push(await time(`ghost${i}@globex.test`));
      }
      expect(median(unknown)).toBeGreaterThan(median(wrong) * 0.4);
    });

    it("should not sign in a user of another tenant with this tenant's header", async () => {
      expectError(
        await post(TENANT.acme, { email_id: 'admin@globex.test', password: DEMO_PASSWORD }),
        401,
        'INVALID_CREDENTIALS',
      );
      expect(
        (await post(TENANT.globex, { email_id: 'admin@globex.test', password: DEMO_PASSWORD })).statusCode,
      ).toBe(200);
    });

    it('should not sign in an inactive or soft-deleted user', async () => {
      await sql(`UPDATE app_users SET usr_status = 0 WHERE usr_email_id = ${placeholder(1)}`, [
        'viewer@acme.test',
      ]);
      expectError(
        await post(TENANT.acme, { email_id: 'viewer@acme.test', password: DEMO_PASSWORD }),
        401,
        'INVALID_CREDENTIALS',
      );
      await sql(
        `UPDATE app_users SET usr_status = 1, usr_is_deleted = ${bool(true)} WHERE usr_email_id = ${placeholder(1)}`,
        ['viewer@acme.test'],
      );
      expectError(
        await post(TENANT.acme, { email_id: 'viewer@acme.test', password: DEMO_PASSWORD }),
        401,
        'INVALID_CREDENTIALS',
      );
      await sql(
        `UPDATE app_users SET usr_is_deleted = ${bool(false)} WHERE usr_email_id = ${placeholder(1)}`,
        ['viewer@acme.test'],
      );
    });

    it('should throttle repeated failures per tenant + e-mail + address with 429 and Retry-After', async () => {
      for (let i = 0; i < 5; i++) {
        expectError(
          await post(TENANT.acme, { email_id: 'root@acme.test', password: 'wrong' }),
          401,
          'INVALID_CREDENTIALS',
        );
      }
      const blocked = await post(TENANT.acme, { email_id: 'root@acme.test', password: DEMO_PASSWORD });
      expectError(blocked, 429, 'RATE_LIMITED');
      expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
      // Another e-mail, and the same e-mail in another tenant, are not affected.
      expect(
        (await post(TENANT.acme, { email_id: 'admin@acme.test', password: DEMO_PASSWORD })).statusCode,
      ).toBe(200);
      expectError(
        await post(TENANT.globex, { email_id: 'root@acme.test', password: 'x' }),
        401,
        'INVALID_CREDENTIALS',
      );
    });

    it('should verify a legacy bcrypt hash and replace it with argon2id (D12)', async () => {
      const legacy = bcrypt.hashSync(DEMO_PASSWORD, 4);
      await sql(
        `UPDATE app_users SET usr_password_hash = ${placeholder(1)} WHERE usr_email_id = ${placeholder(2)}`,
        [legacy, 'admin@globex.test'],
      );
      expect(
        (await post(TENANT.globex, { email_id: 'admin@globex.test', password: DEMO_PASSWORD })).statusCode,
      ).toBe(200);
      const rows: Array<{ h: string }> = await sql(
        `SELECT usr_password_hash AS h FROM app_users WHERE usr_email_id = ${placeholder(1)}`,
        ['admin@globex.test'],
      );
      expect(rows[0].h).toMatch(/^\$argon2id\$/);
      expect(
        (await post(TENANT.globex, { email_id: 'admin@globex.test', password: DEMO_PASSWORD })).statusCode,
      ).toBe(200);
    });
  });

  describe('JWT', () => {
    const profileWith = (token: string, tenantId: string = TENANT.acme) =>
      get(PROFILE, authHeaders(tenantId, token));
    const claims = () => jwt.decode(adminToken) as jwt.JwtPayload;

    it('should return the profile for a valid token', async () => {
      const res = await profileWith(adminToken);
      expect(res.statusCode).toBe(200);
      expect(res.json().data).toMatchObject({
        user_id: 1,
        email_id: 'admin@acme.test',
        role_id: 1,
        tenant_id: '1',
      });
    });

    it('should answer a missing token with 401 UNAUTHORIZED', async () => {
      expectError(await get(PROFILE, { 'x-tenant-id': tenantHeader(TENANT.acme) }), 401, 'UNAUTHORIZED');
      expectError(
        await get(PROFILE, { 'x-tenant-id': tenantHeader(TENANT.acme), authorization: 'Basic abc' }),
        401,
        'UNAUTHORIZED',
      );
    });

    it('should answer a token of another tenant with 403 TENANT_MISMATCH', async () => {
      const globex = (await signin(t.app, TENANT.globex, 'admin@globex.test')).token;
      expectError(await profileWith(globex, TENANT.acme), 403, 'TENANT_MISMATCH');
    });

    it('should refuse alg none', async () => {
      const enc = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
      const none = `${enc({ alg: 'none', typ: 'JWT' })}.${enc(claims())}.`;
      expectError(await profileWith(none), 401, 'TOKEN_INVALID');
    });

    it('should refuse HS512 even with the right secret', async () => {
      const { iat: _iat, ...rest } = claims();
      const hs512 = jwt.sign(rest, TEST_SECRETS.JWT_SECRET, { algorithm: 'HS512' });
      expectError(await profileWith(hs512), 401, 'TOKEN_INVALID');
    });

    it('should refuse a token signed with another secret', async () => {
      const { iat: _iat, ...rest } = claims();
      expectError(
        await profileWith(jwt.sign(rest, 'another-secret-of-sufficient-length-0123456789')),
        401,
        'TOKEN_INVALID',
      );
    });

    it('should answer an expired token with 401 TOKEN_EXPIRED', async () => {
      const past = Math.floor(Date.now() / 1000) - 3600;
      const expired = jwt.sign({ ...claims(), iat: past - 60, exp: past }, TEST_SECRETS.JWT_SECRET, {
        algorithm: 'HS256',
      });
      expectError(await profileWith(expired), 401, 'TOKEN_EXPIRED');
    });

    it('should refuse a token without exp', async () => {
      const { exp: _exp, ...rest } = claims();
      expectError(
        await profileWith(jwt.sign(rest, TEST_SECRETS.JWT_SECRET, { algorithm: 'HS256' })),
        401,
        'TOKEN_INVALID',
      );
    });

    it('should refuse a token whose user was deactivated', async () => {
      const viewer = (await signin(t.app, TENANT.acme, 'viewer@acme.test')).token;
      await sql(`UPDATE app_users SET usr_status = 0 WHERE usr_email_id = ${placeholder(1)}`, [
        'viewer@acme.test',
      ]);
      const cache = t.app.get(CacheService);
      await cache.delete([cache.keys.userState(TENANT.acme, 2)]);
      expectError(await profileWith(viewer), 401, 'TOKEN_INVALID');
      await sql(`UPDATE app_users SET usr_status = 1 WHERE usr_email_id = ${placeholder(1)}`, [
        'viewer@acme.test',
      ]);
      await cache.delete([cache.keys.userState(TENANT.acme, 2)]);
      expect((await profileWith(viewer)).statusCode).toBe(200);
    });

    it('should answer a revoked token (after logout) with 401 TOKEN_REVOKED', async () => {
      const token = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
      const out = await t.app.inject({
        method: 'POST',
        url: '/api/v1/auth/logout',
        headers: authHeaders(TENANT.acme, token),
      });
      expect(out.statusCode).toBe(200);
      expect(out.json().data.message).toEqual(expect.any(String));
      expectError(await profileWith(token), 401, 'TOKEN_REVOKED');
      expect((await profileWith(adminToken)).statusCode).toBe(200);
    });

    it('should answer a missing permission with 403 FORBIDDEN, and grant it through *:*', async () => {
      const viewer = (await signin(t.app, TENANT.acme, 'viewer@acme.test')).token;
      expectError(
        await get('/test/protected/admin-cache', authHeaders(TENANT.acme, viewer)),
        403,
        'FORBIDDEN',
      );
      expect((await get('/test/protected/read-entity', authHeaders(TENANT.acme, viewer))).statusCode).toBe(
        200,
      );
      expect(
        (await get('/test/protected/admin-cache', authHeaders(TENANT.acme, adminToken))).statusCode,
      ).toBe(200);
    });

    it("should enforce the role's permissions, not those the token claims (finding 4)", async () => {
      const viewer = (await signin(t.app, TENANT.acme, 'viewer@acme.test')).token;
      const claimsOfViewer = jwt.decode(viewer) as jwt.JwtPayload;
      const inflated = jwt.sign(
        { ...claimsOfViewer, role_id: 1, roles: ['ADMIN'], permissions: ['*:*', 'admin:system'] },
        TEST_SECRETS.JWT_SECRET,
        { algorithm: 'HS256' },
      );
      expectError(
        await get('/test/protected/admin-cache', authHeaders(TENANT.acme, inflated)),
        403,
        'FORBIDDEN',
      );
      // A token claiming less than the role has gets what the role has.
      const { iat: _iat, iat_ms: _iatMs, ...adminClaims } = claims();
      const deflated = jwt.sign({ ...adminClaims, roles: [], permissions: [] }, TEST_SECRETS.JWT_SECRET, {
        algorithm: 'HS256',
      });
      expect((await get('/test/protected/admin-cache', authHeaders(TENANT.acme, deflated))).statusCode).toBe(
        200,
      );
    });

    describe('claims (issue 9, finding 8)', () => {
      /** The admin token's claims, changed, signed with the right secret: only the claims are wrong. */
      const forge = (changes: Record<string, unknown>, drop: string[] = []) => {
        const now = Math.floor(Date.now() / 1000);
        const forged: Record<string, unknown> = {
          ...claims(),
          iat: now,
          iat_ms: now * 1000,
          exp: now + 600,
          ...changes,
        };
        for (const name of drop) delete forged[name];
        return jwt.sign(forged, TEST_SECRETS.JWT_SECRET, {
          algorithm: 'HS256',
          noTimestamp: !('iat' in forged),
        });
      };
      const now = Math.floor(Date.now() / 1000);
      const yearAhead = now + 365 * 86400;

      it('should accept the forged token when its claims are consistent (control)', async () => {
        expect((await profileWith(forge({}))).statusCode).toBe(200);
      });

      it.each<[string, Record<string, unknown>, string[]]>([
        [
          'an iat a year in the future',
          { iat: yearAhead, iat_ms: yearAhead * 1000, exp: yearAhead + 600 },
          [],
        ],
        ['an iat 60 s in the future', { iat: now + 60, exp: now + 660 }, ['iat_ms']],
        ['no iat', {}, ['iat', 'iat_ms']],
        ['an exp of 1e20', { exp: 1e20 }, []],
        ['a lifetime longer than JWT_EXPIRES_IN (2 days)', { exp: now + 2 * 86400 }, []],
        ['a tennr other than tenant_id', { tennr: '2' }, []],
        ['a sub other than user_id', { sub: '2' }, []],
        ['an iat_ms outside the second of iat', { iat_ms: 1000 }, []],
        ['roles that are not an array of strings', { roles: 'ADMIN' }, []],
        ['permissions that are not an array of strings', { permissions: ['*:*', 7] }, []],
      ])('should refuse a token with %s: 401 TOKEN_INVALID', async (_, changes, drop) => {
        expectError(await profileWith(forge(changes, drop)), 401, 'TOKEN_INVALID');
      });
    });

    it('should check the tenant header before the token (spec §4.1 rule 2)', async () => {
      expectError(await get(PROFILE, { authorization: `Bearer ${adminToken}` }), 400, 'VALIDATION_ERROR');
    });
  });
});
