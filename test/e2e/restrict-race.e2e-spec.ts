import type { DataSource } from 'typeorm';
import { DatabaseService } from '../../src/database/database.service';
import { authHeaders, signin, TENANT } from '../support/auth';
import { startTestApp, TestApp } from '../support/test-app';

type Json = Record<string, any>;

const ROUNDS = 25;
const CHILDREN = 10;

/**
 * D25's restrict rule under concurrency (issue 9 finding 1): one DELETE of a customer sent together
 * with ten order creates that reference it. Whatever wins, the database must never hold a live
 * order of a deleted customer: the delete locks the parent before counting dependents, and a child
 * write locks the parent it references and re-checks that it is live. The same for an update that
 * moves an order to a parent being deleted, and for a cascade.
 */
describe('Restrict rule under concurrent writes (D25)', () => {
  let t: TestApp;
  let ds: DataSource;
  let headers: Record<string, string>;

  beforeAll(async () => {
    t = await startTestApp({ label: 'restrict-race' });
    ds = t.app.get(DatabaseService).dataSource;
    headers = authHeaders(TENANT.acme, (await signin(t.app, TENANT.acme, 'admin@acme.test')).token);
  });

  afterAll(async () => {
    await t?.close();
  });

  const inject = (method: 'POST' | 'PUT' | 'DELETE', url: string, payload?: Json) =>
    t.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });

  async function newCustomer(n: string): Promise<number> {
    const res = await inject('POST', '/api/v1/customers', {
      name: `Race ${n}`,
      email: `race-${n}-${Date.now()}@acme.example`,
    });
    expect(res.statusCode).toBe(201);
    return res.json().data.id as number;
  }

  /** Live orders whose customer is soft-deleted: what the rule forbids. */
  async function orphans(): Promise<number> {
    const rows = await ds.query<Array<{ n: unknown }>>(
      'SELECT COUNT(*) AS n FROM demo_orders o JOIN demo_customers c ON c.cus_id = o.ord_customer_id ' +
        `WHERE o.ord_is_deleted = ${ds.driver.options.type === 'postgres' ? 'false' : '0'} ` +
        `AND c.cus_is_deleted = ${ds.driver.options.type === 'postgres' ? 'true' : '1'}`,
    );
    return Number(rows[0].n);
  }

  it('should never leave live orders of a deleted customer when deletes race order creates', async () => {
    let deletesWon = 0;
    let childrenWon = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const id = await newCustomer(`c${round}`);
      const creates = Array.from({ length: CHILDREN }, () =>
        inject('POST', '/api/v1/orders', { customer_id: id, amount: 1, status: 'new' }),
      );
      const [del, ...made] = await Promise.all([inject('DELETE', `/api/v1/customers/${id}`), ...creates]);
      for (const r of [del, ...made]) expect([200, 201, 400, 409]).toContain(r.statusCode);
      if (del.statusCode === 200) deletesWon++;
      if (made.some((r) => r.statusCode === 201)) childrenWon++;
      // A delete that succeeded saw no order; an order created saw a live customer.
      if (del.statusCode === 200) expect(made.filter((r) => r.statusCode === 201)).toEqual([]);
    }
    expect(await orphans()).toBe(0);
    // Both outcomes occur, so the race was really run.
    expect(deletesWon + childrenWon).toBeGreaterThanOrEqual(ROUNDS);
  });

  it('should never move an order to a customer that a concurrent delete removes', async () => {
    const list = await t.app.inject({ method: 'GET', url: '/api/v1/orders?limit=20&sortBy=id', headers });
    const orders = list.json().data.records as Json[];
    for (let round = 0; round < 10; round++) {
      const id = await newCustomer(`m${round}`);
      const moves = orders.slice(0, 5).map(async (o) => {
        const current = await t.app.inject({ method: 'GET', url: `/api/v1/orders/${o.id}`, headers });
        return inject('PUT', `/api/v1/orders/${o.id}`, {
          customer_id: id,
          lastModified: current.json().data.lastModified,
        });
      });
      const [del, ...moved] = await Promise.all([inject('DELETE', `/api/v1/customers/${id}`), ...moves]);
      if (del.statusCode === 200) expect(moved.filter((r) => r.statusCode === 200)).toEqual([]);
    }
    expect(await orphans()).toBe(0);
  });

  it('should never leave live orders of a customer removed by a cascade racing order creates', async () => {
    for (let round = 0; round < 10; round++) {
      const id = await newCustomer(`k${round}`);
      const first = await inject('POST', '/api/v1/orders', { customer_id: id, amount: 1 });
      expect(first.statusCode).toBe(201);
      const creates = Array.from({ length: 5 }, () =>
        inject('POST', '/api/v1/orders', { customer_id: id, amount: 2 }),
      );
      await Promise.all([inject('DELETE', `/api/v1/customers/${id}?cascade=true`), ...creates]);
    }
    expect(await orphans()).toBe(0);
  });
});
