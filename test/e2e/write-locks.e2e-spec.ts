import { setTimeout as sleep } from 'node:timers/promises';
import { DatabaseService } from '../../src/database/database.service';
import { RecordsWriteRepository } from '../../src/records/records-write.repository';
import { valueLockName } from '../../src/database/dialect/value-lock';
import { authHeaders, signin, TENANT } from '../support/auth';
import { startTestApp, TestApp } from '../support/test-app';
import { testDialect } from '../support/test-database';

/**
 * Unique values under concurrency (value-lock.ts): a write of a unique value waits for another
 * transaction that holds the value's lock and then sees its committed row; a wait longer than
 * WRITE_LOCK_TIMEOUT_MS gives up with 409 on the server dialects. SQLite has no lock to time out:
 * its write transactions run one after another, so there the write waits as long as it takes.
 */
describe('Unique-value locks (WRITE_LOCK_TIMEOUT_MS)', () => {
  const TIMEOUT_MS = 400;
  let t: TestApp;
  let headers: Record<string, string>;

  beforeAll(async () => {
    t = await startTestApp({ label: 'write_locks', env: { WRITE_LOCK_TIMEOUT_MS: String(TIMEOUT_MS) } });
    headers = authHeaders(TENANT.acme, (await signin(t.app, TENANT.acme, 'admin@acme.test')).token);
  });

  afterAll(async () => {
    await t?.close();
  });

  /** Another writer: holds the lock of `email` (as a create would), inserts it, commits after `holdMs`. */
  function competingCreate(email: string, holdMs: number): { locked: Promise<void>; done: Promise<void> } {
    const repository = t.app.get(RecordsWriteRepository);
    let signal!: () => void;
    const locked = new Promise<void>((resolve) => (signal = resolve));
    const done = repository.transaction(t.app.get(DatabaseService).dataSource, async (tx) => {
      await repository.lockValues(tx, [
        valueLockName({ table: 'demo_customers', tenantId: TENANT.acme, column: 'cus_email', value: email }),
      ]);
      await tx.data.manager
        .createQueryBuilder()
        .insert()
        .into('demo_customers')
        .values({ cus_tenant_id: 1, cus_name: 'Holder', cus_email: email, cus_status: 1, cus_is_deleted: 0 })
        .execute();
      signal();
      await sleep(holdMs);
    });
    return { locked, done };
  }

  const create = (email: string) =>
    t.app.inject({ method: 'POST', url: '/api/v1/customers', headers, payload: { name: 'Waiter', email } });

  it('should wait for a writer holding the value and then find the value taken', async () => {
    const holder = competingCreate('held-short@acme.example', TIMEOUT_MS / 4);
    await holder.locked;
    const started = Date.now();
    const res = await create('Held-Short@acme.example');
    await holder.done;
    expect(Date.now() - started).toBeGreaterThanOrEqual(TIMEOUT_MS / 4 - 20);
    expect(res.statusCode).toBe(400);
    expect(res.json().error.details).toEqual([
      { field: 'email', error: 'must be unique; the value is already used' },
    ]);
  });

  it('should give up after WRITE_LOCK_TIMEOUT_MS with 409 and change nothing (SQLite: wait, then 400)', async () => {
    const holder = competingCreate('held-long@acme.example', TIMEOUT_MS * 3);
    await holder.locked;
    const started = Date.now();
    const res = await create('held-long@acme.example');
    const waited = Date.now() - started;
    await holder.done;
    if (testDialect() === 'sqlite') {
      expect(res.statusCode).toBe(400);
      expect(waited).toBeGreaterThanOrEqual(TIMEOUT_MS * 3 - 20);
    } else {
      expect(res.statusCode).toBe(409);
      expect(res.json().error.code).toBe('CONFLICT');
      expect(waited).toBeGreaterThanOrEqual(TIMEOUT_MS - 20);
      expect(waited).toBeLessThan(TIMEOUT_MS * 3);
    }
    const rows = await t.app
      .get(DatabaseService)
      .dataSource.query(
        `SELECT COUNT(*) AS n FROM demo_customers WHERE cus_email = 'held-long@acme.example'`,
      );
    expect(Number((rows as Array<{ n: unknown }>)[0].n)).toBe(1);
    // The lock is free again: another value and the same transaction path work at once.
    expect((await create('after-timeout@acme.example')).statusCode).toBe(201);
  });
});
