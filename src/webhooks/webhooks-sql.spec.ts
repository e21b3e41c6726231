import { DataSource, QueryResult, type QueryRunner } from 'typeorm';
import { assertParsesAsTsql } from '../../test/support/tsql';
import { loadConfig } from '../config/config.schema';
import { createDataSource } from '../database/data-source.factory';
import type { DatabaseService } from '../database/database.service';
import { skipLockedClaim } from '../database/dialect/claim';
import { mssqlDataSource } from '../database/mssql-sql';
import { OutboxRepository } from '../records/outbox/outbox.repository';
import { DeliveriesRepository } from './deliveries.repository';
import type { WebhookRow } from './webhook.types';
import { WebhooksRepository } from './webhooks.repository';
import { plainParams } from '../../test/support/sql-params';

type Dialect = 'mssql' | 'postgres' | 'mariadb' | 'sqlite';
const DIALECTS: readonly Dialect[] = ['mssql', 'postgres', 'mariadb', 'sqlite'];

function offline(dialect: Dialect): DataSource {
  if (dialect === 'mssql') return mssqlDataSource();
  return createDataSource(
    loadConfig({
      JWT_SECRET: 'webhooks-sql-spec-jwt-secret-0123456789abcdef',
      TENANT_ENCRYPTION_KEY: '0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef',
      NODE_ENV: 'test',
      DB_TYPE: dialect,
      ...(dialect === 'sqlite' ? { DB_NAME: ':memory:' } : {}),
    }).db,
  );
}

const TENANT = '4242';
const NOW = Date.UTC(2026, 10, 26, 12, 0, 0);
const HOOK: WebhookRow = {
  id: 77,
  tenantId: TENANT,
  code: 'crm',
  url: 'https://hooks.example.com/',
  events: ['*'],
  secretEncrypted: 'enc:v1:…',
  profileCode: null,
  description: null,
  active: true,
  cursor: 10,
  failingSince: null,
  disabledReason: null,
  lastModified: null,
};

interface Statement {
  sql: string;
  params: unknown[];
}

/** A query runner of `ds` that records each statement and answers `rows` (affected: 1). */
function recorder(ds: DataSource, rows: unknown[] = [{ id: 1, last: 12, cursor: 10 }]) {
  const statements: Statement[] = [];
  const qr = {
    connection: ds,
    isTransactionActive: true,
    isReleased: false,
    query: async (sql: string, params: unknown[] = [], structured = false) => {
      statements.push({ sql, params: plainParams(params) });
      const result = new QueryResult();
      result.records = rows;
      result.raw = rows;
      result.affected = 1;
      return Promise.resolve(structured ? result : rows);
    },
    release: () => Promise.resolve(),
  } as unknown as QueryRunner;
  return { qr, statements };
}

/**
 * The statements of the outbox and webhook repositories per dialect (D54), built by the real
 * drivers on DataSources that are never connected, printed (snapshot) for review (STYLE) and
 * parsed as T-SQL for SQL Server: the tenant is a bound parameter of every tenant read and write;
 * the delivery claim skips rows other workers hold and takes only the head of a record's line;
 * a worker's writes are fenced on its lease owner.
 */
describe.each(DIALECTS)('outbox and webhook SQL on %s (no server)', (dialect) => {
  const ds = offline(dialect);
  const { qr, statements } = recorder(ds);
  // Statements run without a runner of their own go to the recorder too.
  (ds as unknown as { createQueryRunner: () => QueryRunner }).createQueryRunner = () => qr;
  const database = { dataSource: ds } as unknown as DatabaseService;
  const outbox = new OutboxRepository(database);
  const webhooks = new WebhooksRepository(database);
  const deliveries = new DeliveriesRepository(database);
  const tenantBound = (st: Statement) => {
    expect(st.params.includes(Number(TENANT))).toBe(true);
    expect(st.sql).not.toMatch(new RegExp(`\\b${TENANT}\\b`));
  };
  const check = (st: Statement) => {
    if (dialect === 'mssql') assertParsesAsTsql(st.sql);
  };
  const take = async (work: () => Promise<unknown>): Promise<Statement[]> => {
    statements.length = 0;
    await work();
    return [...statements];
  };

  it('appends events: the counter step (locking the tenant row) first, then the rows with their numbers', async () => {
    const sts = await take(() =>
      outbox.append(qr, [
        {
          tenantId: TENANT,
          action: 'updated',
          entityCode: 'customers',
          recordId: 5,
          occurredAt: NOW,
          actor: { userId: 1, email: 'a@b.c' },
          requestId: 'req',
          changes: ['tier'],
          record: { tier: 'gold' },
        },
      ]),
    );
    expect(sts.map((s) => s.sql)).toMatchSnapshot();
    // The counter step (an UPDATE, or MariaDB's upsert for a tenant it has not seen) adds the
    // number of events as a bound value, before any event row is written.
    const counter = sts.findIndex((s) => /^(UPDATE|INSERT INTO) app_event_sequences/.test(s.sql));
    expect(counter).toBeGreaterThanOrEqual(0);
    expect(sts[counter].sql).toMatch(/evs_last_sequence = evs_last_sequence \+ (\?|\$1|@0)/);
    expect(sts[counter].params).toContain(1);
    const insert = sts.findIndex((s) => /INSERT INTO .?app_events/.test(s.sql));
    expect(insert).toBeGreaterThan(counter);
    for (const st of sts) {
      tenantBound(st);
      check(st);
    }
  });

  it("reads a tenant's events by sequence, the tenant bound", async () => {
    const [st] = await take(() => outbox.readAfter(TENANT, 10, 100));
    expect(st.sql).toMatchSnapshot();
    expect(st.sql).toMatch(/evt_tenant_id = .+ AND evt_sequence > /);
    tenantBound(st);
    check(st);
  });

  it('reads and changes webhooks only within the tenant, live rows only', async () => {
    const sts = [
      ...(await take(() => webhooks.list(TENANT))),
      ...(await take(() => webhooks.findByCode(TENANT, 'crm'))),
      ...(await take(() => webhooks.update(TENANT, 77, { whk_description: 'x' }))),
      ...(await take(() => webhooks.claimRelay(HOOK, 'me#relay', 30_000, NOW))),
      ...(await take(() => webhooks.advanceCursor(qr, HOOK, 'me#relay', 10, 12))),
      ...(await take(() => webhooks.markFailure(TENANT, 77, NOW))),
    ];
    expect(sts.map((s) => s.sql)).toMatchSnapshot();
    for (const st of sts) {
      tenantBound(st);
      check(st);
    }
  });

  it('claims the head of each (webhook, record) line of active webhooks, skipping locked rows', () => {
    const claim = skipLockedClaim(qr, deliveries.claimCandidates(qr, NOW, 8));
    expect(claim.sql).toMatchSnapshot();
    expect(claim.sql).toMatch(
      /NOT EXISTS \(SELECT 1 FROM app_webhook_deliveries e .+e\.whd_sequence < d\.whd_sequence/,
    );
    if (dialect === 'mssql') expect(claim.sql).toContain('WITH (UPDLOCK, READPAST, ROWLOCK)');
    if (dialect === 'postgres' || dialect === 'mariadb') expect(claim.sql).toMatch(/FOR UPDATE SKIP LOCKED$/);
    check(claim);
  });

  it("fences a worker's outcome on its lease, and reads the log within the tenant and webhook", async () => {
    const sts = [
      ...(await take(() =>
        deliveries.finish(
          { id: 9, tenantId: TENANT },
          'me#1',
          'DELIVERED',
          {
            status: 204,
            error: null,
            response: '',
            at: NOW,
          },
          null,
        ),
      )),
      ...(await take(() => deliveries.list(TENANT, 77, { limit: 50 }))),
      ...(await take(() => deliveries.requeue(TENANT, 77, 9, NOW))),
    ];
    expect(sts.map((s) => s.sql)).toMatchSnapshot();
    expect(sts[0].sql).toMatch(/whd_lease_owner = .+ AND whd_status = 'DELIVERING'/);
    for (const st of sts) {
      tenantBound(st);
      check(st);
    }
  });
});
