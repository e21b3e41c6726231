import type { DataSource } from 'typeorm';
import { DatabaseService } from '../../src/database/database.service';
import { authHeaders, signin, TENANT } from '../support/auth';
import { startTestApp, TestApp } from '../support/test-app';

type Json = Record<string, any>;

/**
 * D53 with files of several batches (the write path takes 500 rows at a time): an all-or-none
 * import fed to one transaction a batch at a time — a bad row in the last batch undoes the first
 * ones, a good file commits every row with its events numbered in order — and an upsert whose keys
 * are looked up a hundred at a time.
 */
describe('Imports of several batches (D53)', () => {
  let t: TestApp;
  let ds: DataSource;
  let token: string;

  beforeAll(async () => {
    t = await startTestApp({ label: 'import-batches' });
    ds = t.app.get(DatabaseService).dataSource;
    token = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
  });

  afterAll(async () => {
    await t?.close();
  });

  const headers = () => ({ ...authHeaders(TENANT.acme, token), 'content-type': 'text/csv' });

  async function imported(csv: string, query = ''): Promise<Json> {
    const res = await t.app.inject({
      method: 'POST',
      url: `/api/v1/customers/imports${query}`,
      headers: headers(),
      payload: csv,
    });
    expect(res.statusCode).toBe(202);
    const id = (res.json().data as Json).importId as string;
    for (let i = 0; i < 2400; i++) {
      const s = await t.app.inject({ method: 'GET', url: `/api/v1/imports/${id}`, headers: headers() });
      const data = s.json().data as Json;
      if (!['PENDING', 'RUNNING'].includes(data.status as string)) return data;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`import ${id} did not finish`);
  }

  const countNamed = async (prefix: string): Promise<number> =>
    Number(
      (
        await ds
          .createQueryBuilder()
          .select('COUNT(*)', 'n')
          .from('demo_customers', 'c')
          .where('c.cus_name LIKE :p', { p: `${prefix}%` })
          .getRawOne<{ n: unknown }>()
      )?.n,
    );

  /** The acme tenant's customer events after `sequence`, in sequence order. */
  const eventsAfter = async (sequence: number) =>
    (
      await ds
        .createQueryBuilder()
        .select(['e.evt_sequence AS seq', 'e.evt_record_id AS id', 'e.evt_type AS type'])
        .from('app_events', 'e')
        .where('e.evt_tenant_id = :t', { t: Number(TENANT.acme) })
        .andWhere('e.evt_sequence > :s', { s: sequence })
        .orderBy('e.evt_sequence', 'ASC')
        .getRawMany<{ seq: unknown; id: unknown; type: string }>()
    ).map((e) => ({ seq: Number(e.seq), id: Number(e.id), type: e.type }));

  const lastSequence = async (): Promise<number> => {
    const all = await eventsAfter(0);
    return all.length > 0 ? all[all.length - 1].seq : 0;
  };

  const file = (prefix: string, n: number, bad?: number) => {
    const lines = ['name,email,tier'];
    for (let i = 1; i <= n; i++)
      lines.push(
        `${prefix} ${i},${i === bad ? 'not-an-email' : `${prefix.replace(/\W/g, '')}-${i}@acme.example`},silver`,
      );
    return lines.join('\n') + '\n';
  };

  it('should undo every batch of an all-or-none import when a row of its last batch fails', async () => {
    const before = await lastSequence();
    const job = await imported(file('Batches abort', 1201, 1150));
    expect(job).toMatchObject({ status: 'COMPLETED', total: 1201, created: 0, skipped: 1200, failed: 1 });
    expect(job.errors).toEqual([{ row: 1151, field: 'email', error: expect.any(String) }]);
    expect(await countNamed('Batches abort')).toBe(0);
    expect(await eventsAfter(before)).toEqual([]);
    const errors = await t.app.inject({ method: 'GET', url: job.errorFileUrl as string, headers: headers() });
    expect(errors.statusCode).toBe(200);
    const lines = errors.body.trim().split(/\r\n/);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain('Batches abort 1150,not-an-email,silver,email:');
  });

  it('should count a dry run of several batches and write nothing', async () => {
    const before = await lastSequence();
    const job = await imported(file('Batches dry', 1201), '?dryRun=true');
    expect(job).toMatchObject({ status: 'COMPLETED', dryRun: true, total: 1201, created: 1201, failed: 0 });
    expect(await countNamed('Batches dry')).toBe(0);
    expect(await eventsAfter(before)).toEqual([]);
  });

  it('should commit every batch of a good all-or-none import, its events numbered in write order', async () => {
    const before = await lastSequence();
    const job = await imported(file('Batches good', 1201));
    expect(job).toMatchObject({ status: 'COMPLETED', total: 1201, created: 1201, failed: 0, skipped: 0 });
    expect(await countNamed('Batches good')).toBe(1201);
    const events = await eventsAfter(before);
    expect(events).toHaveLength(1201);
    // Numbered without a gap, in the order the rows were written (the spilled batches first).
    expect(events.map((e) => e.seq)).toEqual(Array.from({ length: 1201 }, (_, i) => before + 1 + i));
    expect(events.every((e) => e.type === 'customers.created')).toBe(true);
    const ids = events.map((e) => e.id);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
  });

  it('should upsert a file of several hundred keys: found records updated (e-mail case-blind), the others created', async () => {
    expect(await imported(file('Batches up', 250), '?onError=skip')).toMatchObject({ created: 250 });
    const lines = ['name,email,tier'];
    for (let i = 1; i <= 300; i++) {
      const email = `Batchesup-${i}@acme.example`;
      lines.push(`Batches up v2 ${i},${i <= 10 ? email.toUpperCase() : email},gold`);
    }
    const job = await imported(lines.join('\n') + '\n', '?mode=upsert&key=email');
    expect(job).toMatchObject({ status: 'COMPLETED', total: 300, updated: 250, created: 50, failed: 0 });
    expect(await countNamed('Batches up v2')).toBe(300);
    expect(await countNamed('Batches up ')).toBe(300);
  });
});
