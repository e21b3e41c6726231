import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import type { DataSource } from 'typeorm';
import { DatabaseService } from '../../src/database/database.service';
import { toDbTimestamp } from '../../src/database/dialect/timestamps';
import { authHeaders, signin, TENANT } from '../support/auth';
import { startTestApp, TestApp, waitFor } from '../support/test-app';

type Rec = Record<string, any>;
type Who = 'admin' | 'viewer' | 'root' | 'globex';

interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  at: number;
}

/** What the receiver answers on one path: a status, after a delay, with a body. */
type Behaviour = (
  req: IncomingMessage,
  n: number,
) => { status: number; delayMs?: number; body?: string; headers?: Record<string, string> };

/**
 * Webhooks end to end (D54): the routes and their permission, the secret shown once and encrypted
 * at rest, delivery to a real local HTTP server verified by the `standardwebhooks` package as a
 * receiver would, payloads shaped by the profile, retries with the same webhook-id, dead
 * deliveries and their replay, a timeout, a 410, a redirect not followed, order per record in a
 * burst, a delivery whose worker died, the SSRF rules, and tenant isolation on every route.
 */
describe('webhooks (D54)', () => {
  let t: TestApp;
  let ds: DataSource;
  let server: Server;
  let base: string;
  const received: Received[] = [];
  const behaviours = new Map<string, Behaviour>();
  const counts = new Map<string, number>();
  const token: Partial<Record<Who, string>> = {};

  const tenantOf = (who: Who) => (who === 'globex' ? TENANT.globex : TENANT.acme);
  const call = (
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    url: string,
    who: Who = 'admin',
    payload?: unknown,
  ) =>
    t.app.inject({
      method,
      url,
      headers: authHeaders(tenantOf(who), token[who] ?? ''),
      ...(payload === undefined ? {} : { payload: payload as Rec }),
    });

  const at = (path: string) => received.filter((r) => r.path === path);

  beforeAll(async () => {
    server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const path = req.url ?? '/';
        const n = (counts.get(path) ?? 0) + 1;
        counts.set(path, n);
        received.push({
          path,
          headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])),
          body: Buffer.concat(chunks).toString('utf8'),
          at: Date.now(),
        });
        const b = behaviours.get(path)?.(req, n) ?? { status: 204 };
        setTimeout(() => {
          if (res.destroyed) return;
          res.writeHead(b.status, { 'content-type': 'text/plain', ...(b.headers ?? {}) });
          res.end(b.body ?? '');
        }, b.delayMs ?? 0);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    t = await startTestApp({
      label: 'webhooks',
      env: {
        WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
        WEBHOOK_POLL_MS: '50',
        WEBHOOK_TIMEOUT_MS: '400',
        WEBHOOK_MAX_ATTEMPTS: '3',
        WEBHOOK_RETRY_SCHEDULE_S: '0.05,0.1',
        WEBHOOK_LEASE_MS: '2000',
      },
    });
    ds = t.app.get(DatabaseService).dataSource;
    token.admin = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    token.viewer = (await signin(t.app, TENANT.acme, 'viewer@acme.test')).token;
    token.root = (await signin(t.app, TENANT.acme, 'root@acme.test')).token;
    token.globex = (await signin(t.app, TENANT.globex, 'admin@globex.test')).token;
  });

  afterAll(async () => {
    await t?.close();
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
  });

  async function createHook(
    code: string,
    path: string,
    events: string[] = ['customers.*'],
    who: Who = 'admin',
    extra: Rec = {},
  ) {
    const res = await call('POST', '/api/v1/webhooks', who, {
      code,
      url: `${base}${path}`,
      events,
      ...extra,
    });
    expect(res.statusCode).toBe(201);
    return res.json().data as Rec & { secret: string };
  }

  const newCustomer = async (who: Who, name: string) => {
    const res = await call('POST', '/api/v1/customers', who, {
      name,
      email: `${name.toLowerCase().replace(/\W+/g, '')}-${Date.now()}@x.example`,
      phone: '+41 79 123 45 67',
      internal_notes: 'never out',
    });
    expect(res.statusCode).toBe(201);
    return res.json().data as Rec;
  };

  const deliveriesOf = async (code: string, who: Who = 'admin', query = '') => {
    const res = await call('GET', `/api/v1/webhooks/${code}/deliveries${query}`, who);
    expect(res.statusCode).toBe(200);
    return res.json().data as Rec[];
  };

  describe('configuration routes', () => {
    it('should create a webhook with a whsec_ secret shown once, encrypted at rest, never read back', async () => {
      const created = await createHook('crud_one', '/crud');
      expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      expect(Buffer.from(created.secret.slice(6), 'base64').length).toBeGreaterThanOrEqual(24);
      expect(created).toMatchObject({
        code: 'crud_one',
        events: ['customers.*'],
        active: true,
        profileCode: null,
      });
      const one = await call('GET', '/api/v1/webhooks/crud_one');
      expect(one.statusCode).toBe(200);
      expect(one.json().data).not.toHaveProperty('secret');
      expect(JSON.stringify((await call('GET', '/api/v1/webhooks')).json())).not.toContain(
        created.secret.slice(6),
      );
      const [row] = await ds.query<Rec[]>(`SELECT whk_secret FROM app_webhooks WHERE whk_code = 'crud_one'`);
      expect(String(row.whk_secret)).toMatch(/^enc:v2:[0-9a-f]{8}:/);
      expect(String(row.whk_secret)).not.toContain(created.secret.slice(6, 20));
    });

    it('should change, disable, rotate and delete a webhook', async () => {
      await createHook('crud_two', '/crud2');
      const put = await call('PUT', '/api/v1/webhooks/crud_two', 'admin', {
        events: ['*.deleted'],
        description: 'deletions',
      });
      expect(put.statusCode).toBe(200);
      expect(put.json().data).toMatchObject({ events: ['*.deleted'], description: 'deletions' });
      expect(put.json().data).not.toHaveProperty('secret');
      const rotated = await call('PUT', '/api/v1/webhooks/crud_two', 'admin', {
        rotateSecret: true,
        active: false,
      });
      expect(rotated.json().data).toMatchObject({ active: false, secret: expect.stringMatching(/^whsec_/) });
      const del = await call('DELETE', '/api/v1/webhooks/crud_two');
      expect(del.statusCode).toBe(200);
      expect(del.json().data).toMatchObject({ success: true });
      expect((await call('GET', '/api/v1/webhooks/crud_two')).statusCode).toBe(404);
      // The code is free again.
      await createHook('crud_two', '/crud2');
    });

    it('should refuse bad input with the error envelope, and a duplicate code with 409', async () => {
      const bad = async (payload: unknown, field: string) => {
        const res = await call('POST', '/api/v1/webhooks', 'admin', payload);
        expect(res.statusCode).toBe(400);
        expect(res.json()).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR' } });
        expect(JSON.stringify(res.json().error)).toContain(field);
      };
      await bad({ code: 'x', url: 'ftp://example.com/', events: ['*'] }, 'url');
      await bad({ code: 'x', url: 'http://10.1.2.3/hook', events: ['*'] }, 'private');
      await bad({ code: 'x', url: 'http://169.254.169.254/latest', events: ['*'] }, 'url');
      await bad({ code: 'x', url: 'http://[::1]:8080/', events: ['*'] }, 'url');
      await bad({ code: 'x', url: 'http://localhost:9/', events: ['*'] }, 'loopback');
      await bad({ code: 'x', url: 'https://user:pw@example.com/', events: ['*'] }, 'credentials');
      await bad({ code: 'x', url: 'https://example.com/', events: ['customers'] }, 'events');
      await bad({ code: 'x', url: 'https://example.com/', events: ['nosuch.*'] }, 'nosuch');
      await bad({ code: 'x', url: 'https://example.com/', events: [] }, 'events');
      await bad({ code: 'bad code', url: 'https://example.com/', events: ['*'] }, 'code');
      await bad({ code: 'x', url: 'https://example.com/', events: ['*'], secret: 'mine' }, 'secret');
      await bad(
        { code: 'x', url: 'https://example.com/', events: ['*'], profileCode: 'nosuch' },
        'profileCode',
      );
      await bad(['not', 'an', 'object'], 'body');
      await createHook('dup_one', '/dup');
      const dup = await call('POST', '/api/v1/webhooks', 'admin', {
        code: 'dup_one',
        url: 'https://example.com/',
        events: ['*'],
      });
      expect(dup.statusCode).toBe(409);
      const emptyPut = await call('PUT', '/api/v1/webhooks/dup_one', 'admin', {});
      expect(emptyPut.statusCode).toBe(400);
      expect((await call('PUT', '/api/v1/webhooks/dup_one', 'admin', { active: 'yes' })).statusCode).toBe(
        400,
      );
      expect((await call('GET', '/api/v1/webhooks/dup_one/deliveries?status=nope')).statusCode).toBe(400);
      expect((await call('GET', '/api/v1/webhooks/dup_one/deliveries?limit=0')).statusCode).toBe(400);
      expect((await call('POST', '/api/v1/webhooks/dup_one/deliveries/abc/retry')).statusCode).toBe(404);
      expect((await call('GET', '/api/v1/webhooks/no%20such')).statusCode).toBe(404);
    });

    it('should need admin:webhooks or admin:system, and keep each tenant to its own webhooks', async () => {
      for (const [method, url] of [
        ['GET', '/api/v1/webhooks'],
        ['POST', '/api/v1/webhooks'],
        ['GET', '/api/v1/webhooks/crud_one'],
        ['PUT', '/api/v1/webhooks/crud_one'],
        ['DELETE', '/api/v1/webhooks/crud_one'],
        ['GET', '/api/v1/webhooks/crud_one/deliveries'],
        ['POST', '/api/v1/webhooks/crud_one/deliveries/1/retry'],
      ] as const) {
        const res = await call(
          method,
          url,
          'viewer',
          method === 'GET' || method === 'DELETE' ? undefined : { url: base },
        );
        expect([method, url, res.statusCode]).toEqual([method, url, 403]);
        const anon = await t.app.inject({ method, url, headers: authHeaders(TENANT.acme, '') });
        expect(anon.statusCode).toBe(401);
        // globex's administrator: acme's webhook does not exist for it.
        if (url.includes('crud_one')) {
          const other = await call(
            method,
            url,
            'globex',
            method === 'PUT' ? { description: 'x' } : undefined,
          );
          expect([method, url, other.statusCode]).toEqual([method, url, 404]);
        }
      }
      expect((await call('GET', '/api/v1/webhooks', 'root')).statusCode).toBe(200);
      const theirs = await call('GET', '/api/v1/webhooks', 'globex');
      expect(theirs.json().data).toEqual([]);
      // globex may use the same code for its own webhook.
      await createHook('crud_one', '/globex-crud', ['customers.*'], 'globex');
      expect((await call('GET', '/api/v1/webhooks/crud_one')).json().data.url).toBe(`${base}/crud`);
    });
  });

  describe('delivery', () => {
    it("should deliver a signed event the standardwebhooks verifier accepts, shaped by the profile, and never another tenant's", async () => {
      const hook = await createHook('signed', '/signed');
      const customer = await newCustomer('admin', 'Signed Customer');
      await newCustomer('globex', 'Globex Secret');
      await waitFor(async () => at('/signed').length >= 1, 10_000);
      const [req] = at('/signed');
      const verified = new Webhook(hook.secret).verify(req.body, {
        'webhook-id': req.headers['webhook-id'],
        'webhook-timestamp': req.headers['webhook-timestamp'],
        'webhook-signature': req.headers['webhook-signature'],
      }) as Rec;
      expect(verified).toMatchObject({
        type: 'customers.created',
        timestamp: expect.any(String),
        data: {
          tenantId: TENANT.acme,
          entity: 'customers',
          recordId: customer.id,
          sequence: expect.any(Number),
        },
      });
      expect(verified.data.record).toMatchObject({ id: customer.id, name: 'Signed Customer' });
      // The profile's projection and masking: internal_notes excluded, phone masked.
      expect(verified.data.record).not.toHaveProperty('internal_notes');
      expect(verified.data.record.phone).toMatch(/^\*+.{4}$/);
      expect(verified.data.record.phone).not.toContain('+41');
      expect(verified.data.changes).toEqual(expect.arrayContaining(['name', 'email']));
      expect(req.headers['webhook-id']).toMatch(/^msg_/);
      expect(req.headers['content-type']).toBe('application/json');
      // A tampered body fails verification (the receiver's check is real).
      expect(() =>
        new Webhook(hook.secret).verify(req.body.replace('Signed', 'Forged'), req.headers),
      ).toThrow();
      await waitFor(async () => (await deliveriesOf('signed'))[0]?.status === 'DELIVERED', 5000);
      const [log] = await deliveriesOf('signed');
      expect(log).toMatchObject({
        status: 'DELIVERED',
        attempts: 1,
        lastStatus: 204,
        webhookId: req.headers['webhook-id'],
      });
      await new Promise((r) => setTimeout(r, 300));
      expect(at('/signed').some((r) => r.body.includes('Globex Secret'))).toBe(false);
      // globex cannot read acme's delivery log.
      expect((await call('GET', '/api/v1/webhooks/signed/deliveries', 'globex')).statusCode).toBe(404);
    });

    it("should deliver a workflow step's write (entity.update), as its starter, like any other write", async () => {
      await createHook('workflow', '/workflow', ['customers.updated']);
      const res = await call('POST', '/api/v1/workflows/customer_onboarding/start', 'admin', {
        input: { customerId: 2, tier: 'silver' },
      });
      expect(res.statusCode).toBe(202);
      await waitFor(async () => at('/workflow').some((r) => JSON.parse(r.body).data.recordId === 2), 15_000);
      const body = JSON.parse(
        at('/workflow').find((r) => JSON.parse(r.body).data.recordId === 2)!.body,
      ) as Rec;
      expect(body).toMatchObject({ type: 'customers.updated', data: { entity: 'customers', recordId: 2 } });
      // internal_notes changed, but the profile's projection leaves it out: not named either.
      expect(body.data.changes).not.toContain('internal_notes');
      expect(body.data.record).not.toHaveProperty('internal_notes');
      // The event's actor is the starter (the outbox row; the payload does not carry it).
      const [row] = await ds.query<Rec[]>(
        `SELECT evt_actor_email AS email FROM app_events WHERE evt_uid = '${String(body.data.eventId)}'`,
      );
      expect(String(row.email)).toBe('admin@acme.test');
    });

    it('should retry a failing receiver with the same webhook-id, then deliver; log the answers truncated', async () => {
      behaviours.set('/flaky', (_req, n) =>
        n < 3 ? { status: 500, body: 'x'.repeat(5000) } : { status: 200 },
      );
      await createHook('flaky', '/flaky');
      await newCustomer('admin', 'Flaky');
      await waitFor(async () => at('/flaky').length >= 3, 10_000);
      const ids = new Set(at('/flaky').map((r) => r.headers['webhook-id']));
      expect(ids.size).toBe(1);
      await waitFor(async () => (await deliveriesOf('flaky'))[0]?.status === 'DELIVERED', 5000);
      const [log] = await deliveriesOf('flaky');
      expect(log.attempts).toBe(3);
      const timestamps = at('/flaky').map((r) => r.at);
      expect(timestamps[1] - timestamps[0]).toBeGreaterThanOrEqual(40);
    });

    it('should make a delivery dead after WEBHOOK_MAX_ATTEMPTS, keep it, and send it again on the retry route', async () => {
      let fixed = false;
      behaviours.set('/dead', () =>
        fixed ? { status: 200 } : { status: 503, body: 'down for maintenance' },
      );
      await createHook('dead', '/dead');
      await newCustomer('admin', 'Dead Letter');
      await waitFor(async () => (await deliveriesOf('dead'))[0]?.status === 'DEAD', 10_000);
      const [dead] = await deliveriesOf('dead');
      expect(dead).toMatchObject({
        status: 'DEAD',
        attempts: 3,
        lastStatus: 503,
        lastResponse: 'down for maintenance',
      });
      expect(at('/dead')).toHaveLength(3);
      fixed = true;
      const retry = await call('POST', `/api/v1/webhooks/dead/deliveries/${dead.id}/retry`);
      expect(retry.statusCode).toBe(200);
      expect(retry.json().data.status).toBe('PENDING');
      await waitFor(async () => (await deliveriesOf('dead'))[0]?.status === 'DELIVERED', 5000);
      expect(new Set(at('/dead').map((r) => r.headers['webhook-id']))).toEqual(new Set([dead.webhookId]));
      expect((await deliveriesOf('dead', 'admin', '?status=DEAD')).length).toBe(0);
      // The retry route of another tenant does not reach it.
      await createHook('dead', '/globex-dead', ['orders.*'], 'globex');
      expect(
        (await call('POST', `/api/v1/webhooks/dead/deliveries/${dead.id}/retry`, 'globex')).statusCode,
      ).toBe(404);
      // The metrics count the outcomes and the deliveries by status.
      const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
      expect(metrics).toMatch(/webhook_deliveries_total\{outcome="dead"\} [1-9]/);
      expect(metrics).toMatch(/webhook_deliveries_total\{outcome="delivered"\} [1-9]/);
      expect(metrics).toMatch(/webhook_delivery_lag_seconds_count [1-9]/);
      expect(metrics).toMatch(/webhook_deliveries\{status="DELIVERED"\} [1-9]/);
    });

    it('should count a receiver slower than WEBHOOK_TIMEOUT_MS as a failure', async () => {
      behaviours.set('/slow', (_req, n) => (n === 1 ? { status: 200, delayMs: 1500 } : { status: 200 }));
      await createHook('slow', '/slow');
      await newCustomer('admin', 'Slow');
      await waitFor(async () => (await deliveriesOf('slow'))[0]?.status === 'DELIVERED', 10_000);
      const [log] = await deliveriesOf('slow');
      expect(log.attempts).toBe(2);
      expect(at('/slow')).toHaveLength(2);
    });

    it('should not follow a redirect, and disable a webhook answered 410 Gone', async () => {
      behaviours.set('/moved', () => ({ status: 302, headers: { location: `${base}/elsewhere` } }));
      await createHook('moved', '/moved');
      behaviours.set('/gone', () => ({ status: 410 }));
      await createHook('gone', '/gone');
      await newCustomer('admin', 'Redirected');
      await waitFor(async () => (await deliveriesOf('moved'))[0]?.attempts >= 1, 10_000);
      await waitFor(async () => (await deliveriesOf('gone'))[0]?.status === 'DEAD', 10_000);
      expect(at('/elsewhere')).toHaveLength(0);
      const [moved] = await deliveriesOf('moved');
      expect(moved.lastStatus).toBe(302);
      expect(moved.lastError).toMatch(/redirect not followed/);
      const gone = (await call('GET', '/api/v1/webhooks/gone')).json().data;
      expect(gone).toMatchObject({ active: false, disabledReason: expect.stringMatching(/410/) });
      // While disabled, nothing more is sent; enabling it again resumes.
      await newCustomer('admin', 'While Gone');
      await new Promise((r) => setTimeout(r, 300));
      expect(at('/gone')).toHaveLength(1);
      behaviours.set('/gone', () => ({ status: 200 }));
      expect((await call('PUT', '/api/v1/webhooks/gone', 'admin', { active: true })).json().data.active).toBe(
        true,
      );
      await waitFor(async () => at('/gone').length >= 2, 10_000);
      expect(at('/gone')[1].body).toContain('While Gone');
    });

    it('should disable a webhook that has failed for WEBHOOK_DISABLE_AFTER_S without a success', async () => {
      behaviours.set('/failing', () => ({ status: 500 }));
      await createHook('failing', '/failing');
      // Its failures began more than 24 h ago.
      await ds.query(
        `UPDATE app_webhooks SET whk_failing_since = '${toDbTimestamp(Date.now() - 25 * 3600_000)}' WHERE whk_code = 'failing' AND whk_tenant_id = ${TENANT.acme}`,
      );
      await newCustomer('admin', 'Failing');
      await waitFor(
        async () => (await call('GET', '/api/v1/webhooks/failing')).json().data.active === false,
        10_000,
      );
      expect((await call('GET', '/api/v1/webhooks/failing')).json().data.disabledReason).toMatch(
        /Failing since/,
      );
    });

    it('should deliver every event of a burst, each record in sequence order, even with failures in between', async () => {
      behaviours.set('/burst', (_req, n) => (n % 7 === 3 ? { status: 500 } : { status: 200 }));
      await createHook('burst', '/burst');
      const customers = await Promise.all([1, 2, 3].map((i) => newCustomer('admin', `Burst ${i}`)));
      const tokens = new Map<number, string>(
        customers.map((c) => [c.id as number, c.lastModified as string]),
      );
      for (let round = 0; round < 8; round++) {
        await Promise.all(
          customers.map(async (c) => {
            const res = await t.app.inject({
              method: 'PUT',
              url: `/api/v1/customers/${c.id}`,
              headers: {
                ...authHeaders(TENANT.acme, token.admin!),
                'if-match': `"${tokens.get(c.id as number)}"`,
              },
              payload: { credit_limit: 100 + round },
            });
            expect(res.statusCode).toBe(200);
            tokens.set(c.id as number, res.json().data.lastModified as string);
          }),
        );
      }
      const expected = customers.length * 9;
      await waitFor(
        async () => new Set(at('/burst').map((r) => r.headers['webhook-id'])).size >= expected,
        20_000,
      );
      const delivered = new Map<string, Rec>();
      for (const r of at('/burst')) {
        const b = JSON.parse(r.body) as Rec;
        // Only the first receipt of each webhook-id counts for the order; a retry repeats it.
        if (!delivered.has(r.headers['webhook-id'])) delivered.set(r.headers['webhook-id'], b);
      }
      expect(delivered.size).toBe(expected);
      for (const c of customers) {
        const seqs = [...delivered.values()]
          .filter((b) => b.data.recordId === c.id)
          .map((b) => b.data.sequence as number);
        expect(seqs).toHaveLength(9);
        expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
      }
    });

    it('should send a delivery whose worker died again once its lease ran out, with the same webhook-id', async () => {
      behaviours.set('/crash', () => ({ status: 200 }));
      await createHook('crash', '/crash', ['orders.*']);
      // A delivery left DELIVERING by a worker that died (its lease ran out a second ago).
      const [hook] = await ds.query<Rec[]>(
        `SELECT whk_id FROM app_webhooks WHERE whk_code = 'crash' AND whk_tenant_id = ${TENANT.acme}`,
      );
      const now = Date.now();
      await ds
        .createQueryBuilder()
        .insert()
        .into('app_webhook_deliveries')
        .values({
          whd_uid: 'msg_crashed0000000000000000000000',
          whd_tenant_id: Number(TENANT.acme),
          whd_webhook_id: Number(hook.whk_id),
          whd_event_uid: 'evt_crashed',
          whd_sequence: 1,
          whd_type: 'orders.updated',
          whd_entity_code: 'orders',
          whd_record_id: 1,
          whd_payload: JSON.stringify({ type: 'orders.updated', data: { recordId: 1 } }),
          whd_status: 'DELIVERING',
          whd_attempts: 1,
          whd_lease_owner: 'dead-instance#1',
          whd_lease_until: toDbTimestamp(now - 1000),
          whd_occurred_at: toDbTimestamp(now - 5000),
          whd_created_at: toDbTimestamp(now - 5000),
        })
        .execute();
      await waitFor(async () => at('/crash').length >= 1, 10_000);
      expect(at('/crash')[0].headers['webhook-id']).toBe('msg_crashed0000000000000000000000');
      await waitFor(async () => (await deliveriesOf('crash'))[0]?.status === 'DELIVERED', 5000);
      expect((await deliveriesOf('crash'))[0].attempts).toBe(2);
    });
  });
});
