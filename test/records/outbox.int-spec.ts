import { existsSync } from 'node:fs';
import type { DataSource } from 'typeorm';
import { UsersRepository } from '../../src/auth/users.repository';
import { DatabaseService } from '../../src/database/database.service';
import { createDataSource } from '../../src/database/data-source.factory';
import { dialectOf } from '../../src/database/dialect';
import { toDbTimestamp } from '../../src/database/dialect/timestamps';
import { JobsService } from '../../src/jobs/jobs.service';
import { OutboxRepository } from '../../src/records/outbox/outbox.repository';
import type { PendingEvent } from '../../src/records/outbox/outbox.types';
import type { RecordContext } from '../../src/records/record-context';
import { RecordContextFactory } from '../../src/records/record-context.factory';
import { RecordsWriteRepository } from '../../src/records/records-write.repository';
import { CreateRecord } from '../../src/records/use-cases/create-record';
import { DeleteRecord } from '../../src/records/use-cases/delete-record';
import { UpdateRecord } from '../../src/records/use-cases/update-record';
import { EventsPurgeJob } from '../../src/webhooks/events-purge.job';
import { TENANT } from '../support/auth';
import { startTestApp, TestApp } from '../support/test-app';

type Json = Record<string, any>;

/**
 * D54's outbox on a real database: every committed write through the records core adds its event
 * in its own transaction, with a per-tenant sequence that only grows in commit order — under
 * concurrent writers and from a second "instance" (another connection pool with its own outbox) —
 * and a rolled-back write leaves none. Then the retention purge, as a job of the job machine.
 */
describe('Outbox (D54)', () => {
  let t: TestApp;
  let ds: DataSource;
  let factory: RecordContextFactory;
  let outbox: OutboxRepository;

  beforeAll(async () => {
    t = await startTestApp({ label: 'outbox' });
    ds = t.app.get(DatabaseService).dataSource;
    factory = t.app.get(RecordContextFactory);
    outbox = t.app.get(OutboxRepository);
  });

  afterAll(async () => {
    await t?.close();
  });

  async function contextFor(email: string, tenantId: string, entityCode: string): Promise<RecordContext> {
    const user = await t.app.get(UsersRepository).findByEmail(tenantId, email);
    return factory.fromIds({ tenantId, userId: user!.id, entityCode, requestId: `outbox-${entityCode}` });
  }

  const eventsOf = async (tenantId: string) => outbox.readAfter(tenantId, 0, 100_000);
  const isSqlite = () => dialectOf(ds.driver.options.type) === 'sqlite';

  it('should add one event per create, update and delete, in the same order as their sequence', async () => {
    const ctx = await contextFor('admin@acme.test', TENANT.acme, 'customers');
    const start = await outbox.lastSequence(TENANT.acme);
    const created = await t.app
      .get(CreateRecord)
      .execute(ctx, { name: 'Outbox One', email: 'outbox1@acme.example', tier: 'gold' });
    const updated = await t.app
      .get(UpdateRecord)
      .execute(
        ctx,
        created.id as number,
        { tier: 'silver' },
        { ms: Date.parse(created.lastModified as string) },
      );
    await t.app.get(DeleteRecord).execute(ctx, created.id as number, { cascade: false });
    expect(updated.tier).toBe('silver');
    const events = (await outbox.readAfter(TENANT.acme, start, 100)).filter((e) => e.recordId === created.id);
    expect(events.map((e) => [e.type, e.sequence])).toEqual([
      ['customers.created', start + 1],
      ['customers.updated', start + 2],
      ['customers.deleted', start + 3],
    ]);
    const [c, u, d] = events;
    expect(c).toMatchObject({
      id: expect.stringMatching(/^evt_[0-9a-f]{32}$/),
      tenantId: TENANT.acme,
      entity: 'customers',
      actor: { userId: ctx.user.userId, email: 'admin@acme.test' },
      requestId: 'outbox-customers',
    });
    expect(c.changes).toEqual(expect.arrayContaining(['name', 'email', 'tier']));
    expect(c.record).toMatchObject({ name: 'Outbox One', tier: 'gold' });
    expect(u.changes).toEqual(['tier']);
    expect(u.record).toMatchObject({ tier: 'silver' });
    expect(d.changes).toEqual([]);
    expect(Math.abs(c.occurredAt - Date.now())).toBeLessThan(60_000);
    expect(new Set(events.map((e) => e.id)).size).toBe(3);
  });

  it('should never put a hidden field or a write-only input into an event (users.password)', async () => {
    // As sign-up writes users: the service itself, with its grant (users are maintained by the system).
    const ctx = await factory.forService(TENANT.acme, 'users', 'outbox-users', {
      name: 'signup',
      permissions: ['create:users', 'admin:system'],
    });
    const start = await outbox.lastSequence(TENANT.acme);
    const user = await t.app.get(CreateRecord).execute(ctx, {
      email_id: 'outbox-user@acme.test',
      password: 'A-long-enough-password-1',
    });
    const [e] = await outbox.readAfter(TENANT.acme, start, 10);
    expect(e).toMatchObject({ type: 'users.created', recordId: user.id });
    expect(e.changes).toContain('password');
    const text = JSON.stringify(e.record);
    expect(text).not.toMatch(/password|argon2|A-long-enough/);
    const raw = await ds.query<Json[]>(`SELECT evt_record FROM app_events WHERE evt_uid = '${e.id}'`);
    expect(String(raw[0].evt_record)).not.toMatch(/argon2|A-long-enough/);
  });

  it('should leave no event behind a rolled-back write, and give its number to no one', async () => {
    const ctx = await contextFor('admin@acme.test', TENANT.acme, 'customers');
    const start = await outbox.lastSequence(TENANT.acme);
    const before = (await eventsOf(TENANT.acme)).length;
    // The write and its event run, then the step's own bookkeeping fails: everything rolls back.
    await expect(
      t.app.get(CreateRecord).execute(
        ctx,
        { name: 'Rolled Back', email: 'rolled@acme.example' },
        {
          beforeCommit: () => Promise.reject(new Error('the step failed')),
        },
      ),
    ).rejects.toThrow('the step failed');
    // A validation failure never gets as far.
    await expect(t.app.get(CreateRecord).execute(ctx, { name: '' })).rejects.toMatchObject({
      code: 'VALIDATION_ERROR',
    });
    expect((await eventsOf(TENANT.acme)).length).toBe(before);
    expect(await outbox.lastSequence(TENANT.acme)).toBe(start);
    const rows = await ds.query<Json[]>(
      `SELECT COUNT(*) AS n FROM demo_customers WHERE cus_email = 'rolled@acme.example'`,
    );
    expect(Number(rows[0].n)).toBe(0);
    const next = await t.app.get(CreateRecord).execute(ctx, { name: 'After', email: 'after@acme.example' });
    const [e] = await outbox.readAfter(TENANT.acme, start, 10);
    expect(e).toMatchObject({ recordId: next.id, sequence: start + 1 });
  });

  it('should add an event for every row a cascade deletes, in the same transaction', async () => {
    const ctx = await contextFor('admin@acme.test', TENANT.acme, 'customers');
    const orders = await contextFor('admin@acme.test', TENANT.acme, 'orders');
    const customer = await t.app
      .get(CreateRecord)
      .execute(ctx, { name: 'Parent', email: 'parent@acme.example' });
    const o1 = await t.app
      .get(CreateRecord)
      .execute(orders, { customer_id: customer.id, amount: 5, status: 'new' });
    const o2 = await t.app
      .get(CreateRecord)
      .execute(orders, { customer_id: customer.id, amount: 6, status: 'new' });
    const start = await outbox.lastSequence(TENANT.acme);
    await t.app.get(DeleteRecord).execute(ctx, customer.id as number, { cascade: true });
    const events = await outbox.readAfter(TENANT.acme, start, 10);
    expect(events.map((e) => [e.type, e.recordId])).toEqual([
      ['customers.deleted', customer.id],
      ['orders.deleted', o1.id],
      ['orders.deleted', o2.id],
    ]);
    expect(events.map((e) => e.sequence)).toEqual([start + 1, start + 2, start + 3]);
  });

  it("should number each tenant's events on its own, and never show one tenant another's", async () => {
    const acme = await contextFor('admin@acme.test', TENANT.acme, 'customers');
    const globex = await contextFor('admin@globex.test', TENANT.globex, 'customers');
    const a0 = await outbox.lastSequence(TENANT.acme);
    const g0 = await outbox.lastSequence(TENANT.globex);
    await t.app.get(CreateRecord).execute(globex, { name: 'G1', email: 'g1@globex.example' });
    await t.app.get(CreateRecord).execute(acme, { name: 'A1', email: 'a1@acme.example' });
    await t.app.get(CreateRecord).execute(globex, { name: 'G2', email: 'g2@globex.example' });
    expect(await outbox.lastSequence(TENANT.globex)).toBe(g0 + 2);
    expect(await outbox.lastSequence(TENANT.acme)).toBe(a0 + 1);
    const theirs = await eventsOf(TENANT.globex);
    expect(theirs.every((e) => e.tenantId === TENANT.globex)).toBe(true);
    expect(theirs.map((e) => e.record?.name)).not.toContain('A1');
    expect((await eventsOf(TENANT.acme)).map((e) => e.record?.name)).not.toContain('G1');
  });

  it('should give concurrent writers distinct, gap-free numbers that grow in commit order', async () => {
    const ctx = await contextFor('admin@acme.test', TENANT.acme, 'customers');
    const start = await outbox.lastSequence(TENANT.acme);
    const n = 24;
    await Promise.all(
      Array.from({ length: n }, (_, i) =>
        t.app.get(CreateRecord).execute(ctx, { name: `Burst ${i}`, email: `burst${i}@acme.example` }),
      ),
    );
    const events = await outbox.readAfter(TENANT.acme, start, 100);
    expect(events.map((e) => e.sequence)).toEqual(Array.from({ length: n }, (_, i) => start + i + 1));
    // Commit order: the database's own insertion order of the rows agrees with the numbers.
    const rows = await ds.query<Json[]>(
      `SELECT evt_id, evt_sequence FROM app_events WHERE evt_tenant_id = ${TENANT.acme} AND evt_sequence > ${start} ORDER BY evt_id`,
    );
    expect(rows.map((r) => Number(r.evt_sequence))).toEqual(events.map((e) => e.sequence));
  });

  it("should make a second instance (its own pool and outbox) wait for the first one's commit, so no reader sees a later number first", async () => {
    // A second "instance": another pool on the same database and an outbox of its own.
    const other = createDataSource(t.db.config);
    await other.initialize();
    try {
      const second = new OutboxRepository({ dataSource: other } as DatabaseService);
      const event = (name: string): PendingEvent => ({
        tenantId: TENANT.initech,
        action: 'created',
        entityCode: 'customers',
        recordId: 1,
        occurredAt: Date.now(),
        actor: { userId: null, email: null },
        requestId: null,
        changes: ['name'],
        record: { name },
      });
      const start = await outbox.lastSequence(TENANT.initech);
      // A first event through the records write path's transaction (the flush is its last step).
      await t.app.get(RecordsWriteRepository).transaction(ds, (tx) => {
        tx.emit(event('first'));
        return Promise.resolve();
      });
      if (isSqlite()) {
        // SQLite: one writer per database file (the embedded set-up runs one instance); the second
        // outbox goes on from the same counter.
        const qr = other.createQueryRunner();
        await qr.startTransaction();
        const [a] = await second.append(qr, [event('second')]);
        await qr.commitTransaction();
        await qr.release();
        expect(a.sequence).toBe(start + 2);
        return;
      }
      // Instance 1 again, this time holding the lock: a transaction left open after its append.
      const qr1 = ds.createQueryRunner();
      await qr1.connect();
      await qr1.startTransaction('READ COMMITTED');
      const [held] = await outbox.append(qr1, [event('held')]);
      expect(held.sequence).toBe(start + 2);
      // Instance 2 appends meanwhile: it must wait for instance 1's commit.
      const qr2 = other.createQueryRunner();
      await qr2.connect();
      await qr2.startTransaction('READ COMMITTED');
      let secondDone = false;
      const secondAppend = second.append(qr2, [event('second')]).then(async (r) => {
        secondDone = true;
        await qr2.commitTransaction();
        return r;
      });
      await new Promise((r) => setTimeout(r, 300));
      expect(secondDone).toBe(false);
      // Nothing of instance 1's open transaction is visible to a reader yet.
      expect((await outbox.readAfter(TENANT.initech, start + 1, 10)).length).toBe(0);
      await qr1.commitTransaction();
      const [b] = await secondAppend;
      expect(b.sequence).toBe(start + 3);
      await qr1.release();
      await qr2.release();
      const seen = await outbox.readAfter(TENANT.initech, start, 10);
      expect(seen.map((e) => [e.sequence, e.record?.name])).toEqual([
        [start + 1, 'first'],
        [start + 2, 'held'],
        [start + 3, 'second'],
      ]);
    } finally {
      await other.destroy();
    }
  });

  it('should purge events older than EVENTS_RETENTION_S with a job of the job machine, keeping the numbers', async () => {
    const ctx = await contextFor('admin@acme.test', TENANT.acme, 'customers');
    await t.app.get(CreateRecord).execute(ctx, { name: 'Old', email: 'old@acme.example' });
    const last = await outbox.lastSequence(TENANT.acme);
    const all = await eventsOf(TENANT.acme);
    // Age every event but the last beyond the retention (24 h by default).
    const old = toDbTimestamp(Date.now() - (t.config.events.retentionS + 60) * 1000);
    await ds.query(
      `UPDATE app_events SET evt_occurred_at = '${old}' WHERE evt_tenant_id = ${TENANT.acme} AND evt_sequence < ${last}`,
    );
    const purge = t.app.get(EventsPurgeJob);
    const job = await purge.schedule();
    expect(job).not.toBeNull();
    const done = await t.app.get(JobsService).waitFor(job!, 20_000);
    expect(done.status).toBe('COMPLETED');
    expect((done.result as Json).events).toBeGreaterThanOrEqual(all.length - 1);
    const kept = await eventsOf(TENANT.acme);
    expect(kept.map((e) => e.sequence)).toEqual([last]);
    expect(await outbox.firstSequence(TENANT.acme)).toBe(last);
    // The numbers go on from where they were.
    await t.app.get(CreateRecord).execute(ctx, { name: 'New', email: 'new@acme.example' });
    expect(await outbox.lastSequence(TENANT.acme)).toBe(last + 1);
    // Other tenants' recent events are untouched.
    expect((await eventsOf(TENANT.globex)).length).toBeGreaterThan(0);
  });
  it('should append the events a long transaction moved to disk before the later ones, and forget them on a rollback', async () => {
    const event = (n: number): PendingEvent => ({
      tenantId: TENANT.initech,
      action: 'created',
      entityCode: 'customers',
      recordId: n,
      occurredAt: Date.now(),
      actor: { userId: null, email: null },
      requestId: null,
      changes: ['name'],
      record: { name: `spilled ${n}`, at: new Date(0) },
    });
    const writes = t.app.get(RecordsWriteRepository);
    const start = await outbox.lastSequence(TENANT.initech);
    let spillFile: string | undefined;
    await writes.transaction(ds, async (tx) => {
      for (let n = 1; n <= 3; n++) tx.emit(event(n));
      await tx.spillEvents(TENANT.initech);
      expect(tx.events).toHaveLength(0);
      for (let n = 4; n <= 5; n++) tx.emit(event(n));
      await tx.spillEvents(TENANT.initech);
      // A savepoint undone after the spill drops only its own events.
      await expect(
        tx.withinSavepoint('spill_test', () => {
          tx.emit(event(99));
          return Promise.reject(new Error('undone'));
        }),
      ).rejects.toThrow('undone');
      tx.emit(event(6));
      spillFile = (tx.spilled as unknown as { dir?: string }).dir;
      expect(spillFile && existsSync(spillFile)).toBe(true);
    });
    const after = await outbox.readAfter(TENANT.initech, start, 100);
    expect(after.map((e) => [e.sequence, e.recordId])).toEqual(
      [1, 2, 3, 4, 5, 6].map((n, i) => [start + 1 + i, n]),
    );
    expect(after[0].record).toEqual({ name: 'spilled 1', at: new Date(0).toISOString() });
    // The spill's file is gone once the transaction has ended.
    expect(existsSync(spillFile!)).toBe(false);

    // Rolled back: no event, spilled or not, and the file is gone too.
    const mid = await outbox.lastSequence(TENANT.initech);
    await expect(
      writes.transaction(ds, async (tx) => {
        tx.emit(event(7));
        await tx.spillEvents(TENANT.initech);
        tx.emit(event(8));
        spillFile = (tx.spilled as unknown as { dir?: string }).dir;
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await outbox.readAfter(TENANT.initech, mid, 100)).toEqual([]);
    expect(existsSync(spillFile!)).toBe(false);
  });

  it("should let a tenant's concurrent first writers create its counter together: none deadlocks or is refused busy", async () => {
    // The tenant starts over with no counter row (as a new tenant does), and a burst of writers
    // arrives at once — on MariaDB a create-then-update of the row deadlocked two of them.
    await ds.query(`DELETE FROM app_events WHERE evt_tenant_id = ${TENANT.globex}`);
    await ds.query(`DELETE FROM app_event_sequences WHERE evs_tenant_id = ${TENANT.globex}`);
    const ctx = await contextFor('admin@globex.test', TENANT.globex, 'customers');
    const n = 12;
    const outcomes = await Promise.allSettled(
      Array.from({ length: n }, (_, i) =>
        t.app.get(CreateRecord).execute(ctx, { name: `First ${i}`, email: `first${i}@globex.example` }),
      ),
    );
    expect(outcomes.filter((o) => o.status === 'rejected')).toEqual([]);
    const events = await eventsOf(TENANT.globex);
    expect(events.map((e) => e.sequence)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    const counters = await ds.query<Json[]>(
      `SELECT evs_last_sequence FROM app_event_sequences WHERE evs_tenant_id = ${TENANT.globex}`,
    );
    expect(counters.map((r) => Number(r.evs_last_sequence))).toEqual([n]);
  });
});
