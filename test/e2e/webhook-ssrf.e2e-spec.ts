import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DataSource } from 'typeorm';
import { DatabaseService } from '../../src/database/database.service';
import { authHeaders, signin, TENANT } from '../support/auth';
import { startTestApp, TestApp, waitFor } from '../support/test-app';

type Rec = Record<string, any>;

/**
 * Issue 34 #5: IPv6 forms that carry a private IPv4 address — IPv4-compatible (`::127.0.0.1`),
 * NAT64 (`64:ff9b::7f00:1`), 6to4 (`2002:7f00:1::`), IPv4-mapped in hex — are refused as webhook
 * URLs when saved (400) and, for a webhook stored before the rule, at delivery (`refused: …`, the
 * receiver gets nothing). The receiver's own 127.0.0.1 stays allowed through WEBHOOK_ALLOWED_HOSTS.
 */
describe('webhook SSRF rules for embedded IPv4 addresses (issue 34 #5)', () => {
  let t: TestApp;
  let ds: DataSource;
  let server: Server;
  let port: number;
  let token: string;
  const received: string[] = [];

  const call = (method: 'GET' | 'POST' | 'PUT', url: string, payload?: Rec) =>
    t.app.inject({ method, url, headers: authHeaders(TENANT.acme, token), ...(payload ? { payload } : {}) });

  beforeAll(async () => {
    server = createServer((req, res) => {
      received.push(req.url ?? '/');
      req.resume();
      res.writeHead(204).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
    t = await startTestApp({
      label: 'webhook-ssrf',
      env: { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', WEBHOOK_POLL_MS: '50', WEBHOOK_MAX_ATTEMPTS: '1' },
    });
    ds = t.app.get(DatabaseService).dataSource;
    token = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
  });

  afterAll(async () => {
    await t?.close();
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
  });

  const embedded = ['[::127.0.0.1]', '[::7f00:1]', '[64:ff9b::7f00:1]', '[2002:7f00:1::]', '[::ffff:7f00:1]'];

  it.each(embedded)('should refuse to save a webhook to %s (400) and store nothing', async (host) => {
    const before = await ds.query('SELECT COUNT(*) AS n FROM app_webhooks');
    const res = await call('POST', '/api/v1/webhooks', {
      code: 'embedded',
      url: `http://${host}:${port}/hook`,
      events: ['customers.*'],
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatchObject({
      code: 'VALIDATION_ERROR',
      details: [{ field: 'url', error: expect.stringMatching(/private address/) }],
    });
    expect(await ds.query('SELECT COUNT(*) AS n FROM app_webhooks')).toEqual(before);
  });

  it.each(embedded)("should refuse to change a webhook's URL to %s (400)", async (host) => {
    const code = `ok_${embedded.indexOf(host)}`;
    const created = await call('POST', '/api/v1/webhooks', {
      code,
      url: `http://127.0.0.1:${port}/${code}`,
      events: ['orders.*'],
    });
    expect(created.statusCode).toBe(201);
    const res = await call('PUT', `/api/v1/webhooks/${code}`, { url: `http://${host}:${port}/hook` });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('VALIDATION_ERROR');
    expect((await call('GET', `/api/v1/webhooks/${code}`)).json().data.url).toBe(
      `http://127.0.0.1:${port}/${code}`,
    );
  });

  it('should refuse at delivery a stored URL of such an address, and send nothing to it', async () => {
    const created = await call('POST', '/api/v1/webhooks', {
      code: 'stored_before',
      url: `http://127.0.0.1:${port}/stored`,
      events: ['customers.*'],
    });
    expect(created.statusCode).toBe(201);
    // As if saved before the rule: the URL is set under the API.
    await ds.query(
      `UPDATE app_webhooks SET whk_url = 'http://[64:ff9b::7f00:1]:${port}/stored' WHERE whk_code = 'stored_before' AND whk_tenant_id = ${TENANT.acme}`,
    );
    const customer = await call('POST', '/api/v1/customers', {
      name: 'Nat Sixtyfour',
      email: `nat64-${Date.now()}@x.example`,
    });
    expect(customer.statusCode).toBe(201);
    const deliveries = async () =>
      (await call('GET', '/api/v1/webhooks/stored_before/deliveries')).json().data as Rec[];
    await waitFor(async () => (await deliveries())[0]?.attempts >= 1, 10_000);
    const [delivery] = await deliveries();
    expect(delivery.lastError).toMatch(/^refused: .*64:ff9b::7f00:1.*private address/);
    expect(delivery.lastStatus ?? null).toBeNull();
    expect(received).not.toContain('/stored');
  });
});
