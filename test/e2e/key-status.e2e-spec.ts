import { randomBytes } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { keyIdOf, keyRing } from '../../src/config/key-ring';
import { encryptConnectionString } from '../../src/database/connections/connection-string.crypto';
import { DatabaseService } from '../../src/database/database.service';
import { authHeaders, signin, TENANT } from '../support/auth';
import { startTestApp, type TestApp } from '../support/test-app';
import { TEST_SECRETS } from '../support/test-database';

type Json = Record<string, any>;

const NEW_KEY = randomBytes(32).toString('hex');
const OLD_KEY = TEST_SECRETS.TENANT_ENCRYPTION_KEY;
const kid = (hex: string) => keyIdOf(Buffer.from(hex, 'hex'));

/**
 * Issue 34 #14: `GET /api/v1/admin/keys` answers, per kind of stored secret, the values under each
 * accepted key id (current first), legacy and unreadable ones, and what keys:rotate has left —
 * counts only, never a value; `admin:system` only. The app runs mid-rotation: current key new,
 * the old one still accepted.
 */
describe('GET /api/v1/admin/keys (issue 34 #14)', () => {
  let t: TestApp;
  let ds: DataSource;
  const token: Record<string, string> = {};

  beforeAll(async () => {
    t = await startTestApp({
      label: 'key-status',
      env: { CONNECTION_ENCRYPTION_KEY: NEW_KEY, CONNECTION_ENCRYPTION_KEY_PREVIOUS: OLD_KEY },
    });
    ds = t.app.get(DatabaseService).dataSource;
    token.root = (await signin(t.app, TENANT.acme, 'root@acme.test')).token;
    token.admin = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    token.viewer = (await signin(t.app, TENANT.acme, 'viewer@acme.test')).token;
    token.globex = (await signin(t.app, TENANT.globex, 'admin@globex.test')).token;
  });

  afterAll(async () => {
    await t?.close();
  });

  const status = (who: string, tenant: string = TENANT.acme) =>
    t.app.inject({ method: 'GET', url: '/api/v1/admin/keys', headers: authHeaders(tenant, token[who]) });
  const kindOf = (body: Json, kind: string) => (body.storedSecrets as Json[]).find((s) => s.kind === kind)!;

  it('should count the stored secrets per key id, with what is left to rotate', async () => {
    const created = await t.app.inject({
      method: 'POST',
      url: '/api/v1/webhooks',
      headers: authHeaders(TENANT.acme, token.admin),
      payload: { code: 'key_status', url: 'https://hooks.example.com/in', events: ['customers.*'] },
    });
    expect(created.statusCode).toBe(201);
    const before = (await status('root')).json().data as Json;
    expect(before.currentKid).toBe(kid(NEW_KEY));
    expect(before.previousKids).toEqual([kid(OLD_KEY)]);
    const hooks = kindOf(before, 'webhookSecrets');
    expect(hooks.column).toBe('app_webhooks.whk_secret');
    expect(hooks.keys[0]).toEqual({ kid: kid(NEW_KEY), current: true, count: hooks.total - hooks.empty });

    // One secret still under the old key (written before the rotation), one under no accepted key.
    const old = encryptConnectionString(
      'whsec_old',
      keyRing(Buffer.from(OLD_KEY, 'hex')),
      'mtb:app_webhooks:v1',
    );
    const foreign = encryptConnectionString('whsec_x', keyRing(randomBytes(32)), 'mtb:app_webhooks:v1');
    for (const [code, value] of [
      ['key_old', old],
      ['key_foreign', foreign],
    ]) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/v1/webhooks',
        headers: authHeaders(TENANT.globex, token.globex),
        payload: { code, url: 'https://hooks.example.com/in', events: ['orders.*'] },
      });
      expect(res.statusCode).toBe(201);
      await ds.query(`UPDATE app_webhooks SET whk_secret = '${value}' WHERE whk_code = '${code}'`);
    }
    const res = await status('root');
    expect(res.statusCode).toBe(200);
    const after = kindOf(res.json().data as Json, 'webhookSecrets');
    expect(after.total).toBe(hooks.total + 2);
    expect(after.keys).toEqual([
      { kid: kid(NEW_KEY), current: true, count: hooks.keys[0].count },
      { kid: kid(OLD_KEY), current: false, count: 1 },
    ]);
    expect(after).toMatchObject({ unreadable: 1, toRotate: 1 });
    expect(kindOf(res.json().data as Json, 'connections').column).toBe(
      'app_connections.con_connection_string',
    );
    // Counts only: no value, plain or encrypted.
    expect(res.body).not.toMatch(/enc:v|whsec_|postgres:\/\/|Server=/);
  });

  it.each([
    ['a tenant administrator (*:*)', 'admin', TENANT.acme],
    ['a viewer', 'viewer', TENANT.acme],
    ["another tenant's administrator", 'globex', TENANT.globex],
  ])('should refuse %s with 403', async (_name, who, tenant) => {
    const res = await status(who, tenant);
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe('FORBIDDEN');
  });

  it('should refuse a request without a token with 401', async () => {
    const res = await t.app.inject({
      method: 'GET',
      url: '/api/v1/admin/keys',
      headers: { 'x-tenant-id': authHeaders(TENANT.acme, 'x')['x-tenant-id'] },
    });
    expect(res.statusCode).toBe(401);
  });
});
