import type { DataSource } from 'typeorm';
import { UsersRepository } from '../../src/auth/users.repository';
import { CollectionEvent, CollectionEventsService } from '../../src/cache/collection-events';
import { AppError } from '../../src/common/errors/app-error';
import { DatabaseService } from '../../src/database/database.service';
import type { FilterCondition } from '../../src/records/query/record-query';
import type { RecordContext } from '../../src/records/record-context';
import { RecordContextFactory } from '../../src/records/record-context.factory';
import { CreateRecord } from '../../src/records/use-cases/create-record';
import { DeleteRecord } from '../../src/records/use-cases/delete-record';
import { ListRecords, PageRecords, ReadRecord } from '../../src/records/use-cases/read-records';
import { UpdateRecord } from '../../src/records/use-cases/update-record';
import { TENANT } from '../support/auth';
import { startTestApp, TestApp } from '../support/test-app';

type Json = Record<string, any>;

/**
 * The records core on a real database with contexts built from ids — no HTTP request anywhere
 * (D47): what an export job or a workflow worker does. Also the proof that the tenant predicate
 * of the one scope builder is what keeps reads, counts, writes and cascades inside the tenant:
 * with it removed (mockDropTenant), the same checks fail.
 */
let mockDropTenant = false;
jest.mock('../../src/records/scope', () => {
  const actual = jest.requireActual<typeof import('../../src/records/scope')>('../../src/records/scope');
  return {
    ...actual,
    scopePredicates: (...args: Parameters<typeof actual.scopePredicates>) => {
      const all = actual.scopePredicates(...args);
      const [entity, , column] = args;
      return mockDropTenant ? all.filter((c) => !c.sql.includes(column(entity.columns.tenant))) : all;
    },
  };
});

describe('Records core without HTTP (D47)', () => {
  let t: TestApp;
  let ds: DataSource;
  let factory: RecordContextFactory;

  beforeAll(async () => {
    t = await startTestApp({ label: 'records' });
    ds = t.app.get(DatabaseService).dataSource;
    factory = t.app.get(RecordContextFactory);
  });

  afterAll(async () => {
    await t?.close();
  });

  /** A context as a worker builds it: from the ids stored in its job. */
  async function contextFor(email: string, tenantId: string, entityCode: string): Promise<RecordContext> {
    const user = await t.app.get(UsersRepository).findByEmail(tenantId, email);
    return factory.fromIds({ tenantId, userId: user!.id, entityCode, requestId: `int-${entityCode}` });
  }

  const allRows = async (ctx: RecordContext): Promise<Json[]> => {
    const rows: Json[] = [];
    for await (const batch of t.app.get(PageRecords).stream(ctx, { filters: [], sort: [] }, 7))
      rows.push(...batch);
    return rows;
  };

  describe('reads', () => {
    it('should read and list with a context built from ids, scoped to its tenant', async () => {
      const ctx = await contextFor('admin@acme.test', TENANT.acme, 'customers');
      expect(ctx.user.permissions).toContain('*:*');
      const one = await t.app.get(ReadRecord).execute(ctx, 1);
      expect(one).toMatchObject({ id: 1, email: 'customer1@acme.example', lastModified: expect.any(String) });
      expect(one).not.toHaveProperty('internal_notes');
      expect(one.phone).toMatch(/^\*+\d{4}$/);
      const list = await t.app
        .get(ListRecords)
        .execute(ctx, { filters: [], sort: [], page: { kind: 'offset', limit: 5, skip: 0 } });
      expect(list.total).toBe(50);
      expect(list.records).toHaveLength(5);
    });

    it("should bind each caller's tenant to the by-key statement it keeps: another tenant reads none of acme's rows", async () => {
      const acme = await contextFor('admin@acme.test', TENANT.acme, 'customers');
      const globex = await contextFor('admin@globex.test', TENANT.globex, 'customers');
      const read = t.app.get(ReadRecord);
      const own = await read.execute(acme, 1); // builds and keeps the statement
      expect(own).toMatchObject({ id: 1, email: 'customer1@acme.example' });
      // The same statement text, globex's tenant bound: acme's rows are not found.
      await expect(read.execute(globex, 1)).rejects.toMatchObject({ code: 'NOT_FOUND' });
      await expect(read.execute(globex, 2)).rejects.toMatchObject({ code: 'NOT_FOUND' });
      const globexRow = await ds.query<Array<{ id: number }>>(
        `SELECT cus_id AS id FROM demo_customers WHERE cus_tenant_id = ${TENANT.globex} ORDER BY cus_id`,
      );
      expect(globexRow.length).toBeGreaterThan(0);
      const theirs = await read.execute(globex, Number(globexRow[0].id));
      expect(theirs.id).toBe(Number(globexRow[0].id));
      await expect(read.execute(acme, Number(globexRow[0].id))).rejects.toMatchObject({ code: 'NOT_FOUND' });
      // And acme again, after globex used the kept statement.
      expect(await read.execute(acme, 2)).toMatchObject({ id: 2, email: 'customer2@acme.example' });
    });

    it('should stream every row exactly once in keyset batches, an insert between batches included', async () => {
      const ctx = await contextFor('admin@acme.test', TENANT.acme, 'orders');
      const seen: number[] = [];
      let round = 0;
      const before = (await allRows(ctx)).map((r) => r.id as number);
      for await (const batch of t.app
        .get(PageRecords)
        .stream(ctx, { filters: [], sort: [{ field: 'amount', direction: 'desc' }] }, 13)) {
        seen.push(...batch.map((r) => r.id as number));
        if (round++ === 1) {
          // A new order with the smallest amount sorts last: the stream must still reach it once.
          await t.app.get(CreateRecord).execute(ctx, { customer_id: 1, amount: 0, status: 'new' });
        }
      }
      expect(new Set(seen).size).toBe(seen.length);
      expect(seen.length).toBe(before.length + 1);
    });

    it('should apply every operator of spec §2.9.1 as the rows say', async () => {
      const ctx = await contextFor('admin@acme.test', TENANT.acme, 'customers');
      const rows = await allRows(ctx);
      const count = (filters: FilterCondition[]) =>
        t.app.get(PageRecords).count(ctx, { filters, sort: [], page: { kind: 'all' } });
      const cases: Array<[FilterCondition, (r: Json) => boolean]> = [
        [{ field: 'tier', operator: 'equals', value: 'gold' }, (r) => r.tier === 'gold'],
        [{ field: 'tier', operator: 'not_equals', value: 'gold' }, (r) => r.tier !== 'gold'],
        [
          { field: 'tier', operator: 'in', value: ['gold', 'silver'] },
          (r) => ['gold', 'silver'].includes(r.tier),
        ],
        [{ field: 'tier', operator: 'not_in', value: ['gold'] }, (r) => r.tier !== 'gold'],
        [{ field: 'name', operator: 'contains', value: 'AN' }, (r) => /an/i.test(r.name)],
        [
          { field: 'email', operator: 'starts_with', value: 'Customer1' },
          (r) => String(r.email).startsWith('customer1'),
        ],
        [
          { field: 'email', operator: 'ends_with', value: '5@acme.example' },
          (r) => String(r.email).endsWith('5@acme.example'),
        ],
        [{ field: 'credit_limit', operator: 'greater_than', value: 20000 }, (r) => r.credit_limit > 20000],
        [{ field: 'credit_limit', operator: 'less_than', value: 5000 }, (r) => r.credit_limit < 5000],
        [
          { field: 'credit_limit', operator: 'between', value: [5000, 20000] },
          (r) => r.credit_limit >= 5000 && r.credit_limit <= 20000,
        ],
        [{ field: 'credit_limit', operator: 'is_null' }, (r) => r.credit_limit === null],
        [{ field: 'credit_limit', operator: 'is_not_null' }, (r) => r.credit_limit !== null],
      ];
      for (const [filter, expected] of cases) {
        expect({ filter, count: await count([filter]) }).toEqual({
          filter,
          count: rows.filter(expected).length,
        });
      }
      // A LIKE pattern's wildcards are text, not wildcards.
      expect(await count([{ field: 'name', operator: 'contains', value: '%' }])).toBe(0);
    });

    it('should refuse operators on the wrong type, masked or unknown fields, and bad values with 400 details', async () => {
      const ctx = await contextFor('admin@acme.test', TENANT.acme, 'customers');
      const problems = t.app.get(PageRecords).count(ctx, {
        filters: [
          { field: 'credit_limit', operator: 'contains', value: '1', label: 'filters[0]' },
          { field: 'phone', operator: 'equals', value: 'x', label: 'filters[1]' },
          { field: 'nope', operator: 'equals', value: 'x', label: 'filters[2]' },
          { field: 'tier', operator: 'between', value: ['a', 'b'], label: 'filters[3]' },
          { field: 'credit_limit', operator: 'between', value: [1], label: 'filters[4]' },
          { field: 'tier', operator: 'in', value: [], label: 'filters[5]' },
        ],
        sort: [],
        page: { kind: 'all' },
      });
      await expect(problems).rejects.toMatchObject({
        code: 'VALIDATION_ERROR',
        details: [
          { field: 'filters[0]', error: expect.stringMatching(/does not apply/) },
          { field: 'filters[1]', error: 'unknown or not filterable field' },
          { field: 'filters[2]', error: 'unknown or not filterable field' },
          { field: 'filters[3]', error: expect.stringMatching(/does not apply/) },
          { field: 'filters[4]', error: 'must be a list [from, to]' },
          { field: 'filters[5]', error: expect.stringMatching(/list of 1 to/) },
        ],
      });
    });
  });

  describe('writes', () => {
    it('should create, update and delete with audit rows and collection events, as a worker would', async () => {
      const ctx = await contextFor('admin@acme.test', TENANT.acme, 'customers');
      const events: CollectionEvent[] = [];
      const off = t.app.get(CollectionEventsService).subscribe((e) => {
        events.push(e);
      });
      try {
        const created = await t.app
          .get(CreateRecord)
          .execute(ctx, { name: 'Worker Made', email: 'worker@acme.example' });
        const updated = await t.app
          .get(UpdateRecord)
          .execute(
            ctx,
            created.id as number,
            { tier: 'gold' },
            { ms: Date.parse(created.lastModified as string) },
          );
        expect(updated).toMatchObject({ id: created.id, tier: 'gold' });
        const deleted = await t.app.get(DeleteRecord).execute(ctx, created.id as number, { cascade: false });
        expect(deleted.success).toBe(true);
        const audit = await ds.query<Array<{ ev: string; req: string }>>(
          `SELECT aud_event AS ev, aud_request_id AS req FROM app_audit_logs WHERE aud_record_id = '${String(created.id)}' AND aud_entity_code = 'customers' ORDER BY aud_id`,
        );
        expect(audit).toEqual([
          { ev: 'entity.created', req: 'int-customers' },
          { ev: 'entity.updated', req: 'int-customers' },
          { ev: 'entity.deleted', req: 'int-customers' },
        ]);
        await new Promise((r) => setTimeout(r, 50));
        expect(events.filter((e) => e.id === created.id).map((e) => e.type)).toEqual([
          'created',
          'updated',
          'deleted',
        ]);
      } finally {
        off();
      }
    });

    it('should act with the user as the database has it now: an inactive user gets no context', async () => {
      await ds.query(`UPDATE app_users SET usr_status = 0 WHERE usr_email_id = 'viewer@acme.test'`);
      await expect(contextFor('viewer@acme.test', TENANT.acme, 'customers')).rejects.toMatchObject({
        code: 'FORBIDDEN',
      });
      await ds.query(`UPDATE app_users SET usr_status = 1 WHERE usr_email_id = 'viewer@acme.test'`);
    });
  });

  /**
   * Attempts of globex's administrator on acme's rows through every kind of statement; returns
   * which kinds let something through. Each call uses fresh rows.
   */
  async function isolationProblems(): Promise<string[]> {
    const problems = new Set<string>();
    const globex = await contextFor('admin@globex.test', TENANT.globex, 'customers');
    const acme = await contextFor('admin@acme.test', TENANT.acme, 'customers');
    const victim = await t.app
      .get(CreateRecord)
      .execute(acme, { name: 'Victim', email: `victim-${Date.now()}@acme.example` });
    const id = victim.id as number;
    const refused = async (kind: string, work: () => Promise<unknown>) => {
      try {
        await work();
        problems.add(kind);
      } catch (err) {
        if (!(err instanceof AppError) || err.code !== 'NOT_FOUND') throw err;
      }
    };
    await refused('read', () => t.app.get(ReadRecord).execute(globex, id));
    const globexRows = await ds.query<Array<{ n: unknown }>>(
      `SELECT COUNT(*) AS n FROM demo_customers WHERE cus_tenant_id = 2 AND cus_is_deleted = ${ds.driver.options.type === 'postgres' ? 'false' : '0'}`,
    );
    const counted = await t.app
      .get(PageRecords)
      .count(globex, { filters: [], sort: [], page: { kind: 'all' } });
    if (counted !== Number(globexRows[0].n)) problems.add('count');
    await refused('write', () =>
      t.app
        .get(UpdateRecord)
        .execute(globex, id, { name: 'Taken' }, { ms: Date.parse(victim.lastModified as string) }),
    );
    // A globex customer, and an acme order that (wrongly) carries its id: globex's cascade must not reach it.
    const target = await t.app
      .get(CreateRecord)
      .execute(globex, { name: 'Gone', email: `gone-${Date.now()}@globex.example` });
    await ds
      .createQueryBuilder()
      .insert()
      .into('demo_orders', ['ord_tenant_id', 'ord_customer_id', 'ord_amount', 'ord_status', 'ord_is_deleted'])
      .values({
        ord_tenant_id: 1,
        ord_customer_id: target.id,
        ord_amount: 1,
        ord_status: 1,
        ord_is_deleted: 0,
      })
      .execute();
    await t.app.get(DeleteRecord).execute(globex, target.id as number, { cascade: true });
    const acmeOrder = await ds.query<Array<{ d: unknown }>>(
      `SELECT ord_is_deleted AS d FROM demo_orders WHERE ord_tenant_id = 1 AND ord_customer_id = ${String(target.id)}`,
    );
    if (acmeOrder.some((r) => r.d === true || Number(r.d) === 1)) problems.add('cascade');
    return [...problems].sort();
  }

  describe('tenant isolation by the one scope builder', () => {
    it('should keep reads, counts, writes and cascades inside the tenant', async () => {
      expect(await isolationProblems()).toEqual([]);
    });

    it('should let reads, counts, writes and cascades cross tenants once the tenant predicate is removed', async () => {
      mockDropTenant = true;
      try {
        expect(await isolationProblems()).toEqual(['cascade', 'count', 'read', 'write']);
      } finally {
        mockDropTenant = false;
      }
    });
  });
});
