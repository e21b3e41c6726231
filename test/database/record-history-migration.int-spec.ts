import { DataSource } from 'typeorm';
import { createDataSource } from '../../src/database/data-source.factory';
import { MIGRATIONS } from '../../src/database/migrations';
import { RecordHistory1795824000000 } from '../../src/database/migrations/1795824000000-record-history';
import { createTestDatabase, TestDatabase } from '../support/test-database';

/**
 * D56's migration on a database that already holds audit entries: each record's entries get the
 * versions 1, 2, … in the order they were written, and their request id as operation id.
 */
describe(RecordHistory1795824000000.name, () => {
  let db: TestDatabase;
  let ds: DataSource;

  beforeAll(async () => {
    db = await createTestDatabase('history_migration');
    ds = createDataSource({ ...db.config });
    ds.setOptions({ migrations: MIGRATIONS.filter((m) => m !== RecordHistory1795824000000) });
    await ds.initialize();
    await ds.runMigrations({ transaction: 'each' });
  });

  afterAll(async () => {
    await ds?.destroy();
    await db?.drop();
  });

  it('should number the entries written before it per record and keep them readable', async () => {
    const insert = (record: string, at: string, event: string, request: string) =>
      ds.query(
        `INSERT INTO app_audit_logs (aud_tenant_id, aud_user_id, aud_event, aud_entity_code, aud_record_id, aud_before, aud_after, aud_request_id, aud_at) VALUES (1, 1, '${event}', 'customers', '${record}', NULL, '{"name":"x"}', '${request}', '${at}')`,
      );
    await insert('7', '2026-01-01 10:00:00.000', 'entity.created', 'r1');
    await insert('8', '2026-01-01 10:00:01.000', 'entity.created', 'r2');
    await insert('7', '2026-01-01 10:00:02.000', 'entity.updated', 'r3');
    await insert('7', '2026-01-01 10:00:03.000', 'entity.deleted', 'r4');
    await insert('8', '2026-01-01 10:00:03.000', 'entity.deleted', 'r4');

    await ds.destroy();
    ds = createDataSource({ ...db.config });
    await ds.initialize();
    const ran = await ds.runMigrations({ transaction: 'each' });
    expect(ran.map((m) => m.name)).toEqual(['RecordHistory1795824000000']);

    const rows: Array<Record<string, unknown>> = await ds.query(
      `SELECT aud_record_id AS rid, aud_event AS ev, aud_version AS v, aud_operation_id AS op, aud_after AS aft FROM app_audit_logs ORDER BY aud_id`,
    );
    expect(rows.map((r) => [String(r.rid), r.ev, Number(r.v), r.op])).toEqual([
      ['7', 'entity.created', 1, 'r1'],
      ['8', 'entity.created', 1, 'r2'],
      ['7', 'entity.updated', 2, 'r3'],
      ['7', 'entity.deleted', 3, 'r4'],
      ['8', 'entity.deleted', 2, 'r4'],
    ]);
    expect(JSON.parse(String(rows[0].aft))).toEqual({ name: 'x' });
  });
});
