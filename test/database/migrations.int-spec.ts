import { DataSource } from 'typeorm';
import { MIGRATIONS } from '../../src/database/migrations';
import {
  ADDED_COLUMNS,
  AUDIT_HISTORY_COLUMNS,
  EXPORT_TABLES,
  JOB_TABLES,
  TENANT_USAGE_TABLES,
  IMPORT_TABLES,
  OUTBOX_TABLES,
  REVOCATION_TABLES,
  TABLES,
  WORKFLOW_INSTANCE_COLUMNS,
  WORKFLOW_QUEUE_COLUMNS,
  WORKFLOW_STEP_KEYS_TABLE,
} from '../../src/database/schema';
import { createTestDatabase, migratedDataSource, TestDatabase } from '../support/test-database';

describe('Migrations (InitialSchema, RevokedTokens, ExportFiles, WorkflowRuntime, TenantKeyIndexes, Jobs, Outbox, RecordHistory, TenantUsage, ImportBatches, JobVisibility)', () => {
  let db: TestDatabase;
  let ds: DataSource;

  beforeAll(async () => {
    db = await createTestDatabase('migrations');
    ds = await migratedDataSource(db);
  });

  afterAll(async () => {
    await ds?.destroy();
    await db?.drop();
  });

  it('should create every table with exactly the declared columns', async () => {
    const qr = ds.createQueryRunner();
    try {
      for (const def of [
        ...TABLES,
        ...REVOCATION_TABLES,
        ...EXPORT_TABLES,
        WORKFLOW_STEP_KEYS_TABLE,
        ...JOB_TABLES,
        ...TENANT_USAGE_TABLES,
        ...IMPORT_TABLES,
        ...OUTBOX_TABLES,
      ]) {
        const table = await qr.getTable(def.name);
        expect(table).toBeDefined();
        const declared = [...def.columns, ...(ADDED_COLUMNS[def.name] ?? [])];
        expect(table!.columns.map((c) => c.name).sort()).toEqual(declared.map((c) => c.name).sort());
      }
    } finally {
      await qr.release();
    }
  });

  it('should refuse a second user with the same e-mail in one tenant, but allow it in another', async () => {
    await ds.query(
      `INSERT INTO app_tenants (tnt_tenant_code, tnt_tenant_name) VALUES ('ua', 'A'), ('ub', 'B')`,
    );
    const ids: Array<{ tnt_id: number }> = await ds.query(
      `SELECT tnt_id FROM app_tenants WHERE tnt_tenant_code IN ('ua', 'ub') ORDER BY tnt_tenant_code`,
    );
    const [a, b] = ids.map((r) => Number(r.tnt_id));
    const insert = (tenant: number) =>
      ds.query(`INSERT INTO app_users (usr_tenant_id, usr_email_id) VALUES (${tenant}, 'same@x.test')`);
    await insert(a);
    await expect(insert(a)).rejects.toThrow();
    await expect(insert(b)).resolves.toBeDefined();
  });

  it('should apply the convention defaults: status 1, is_deleted false', async () => {
    await ds.query(`INSERT INTO app_tenants (tnt_tenant_code, tnt_tenant_name) VALUES ('t1', 'T1')`);
    const rows: Array<Record<string, unknown>> = await ds.query(
      `SELECT tnt_status, tnt_is_deleted FROM app_tenants WHERE tnt_tenant_code = 't1'`,
    );
    expect(Number(rows[0].tnt_status)).toBe(1);
    expect(Boolean(Number(rows[0].tnt_is_deleted))).toBe(false);
  });

  it('should keep rvk_jti unique when set and allow any number of user-wide rows (jti NULL)', async () => {
    const insert = (jti: string | null) =>
      ds
        .createQueryBuilder()
        .insert()
        .into('app_revoked_tokens', [
          'rvk_tenant_id',
          'rvk_user_id',
          'rvk_jti',
          'rvk_not_before',
          'rvk_expires_at',
          'rvk_created_at',
        ])
        .values({
          rvk_tenant_id: 1,
          rvk_user_id: 1,
          rvk_jti: jti,
          rvk_not_before: jti === null ? '2026-01-01 00:00:00.123' : null,
          rvk_expires_at: '2026-01-02 00:00:00.456',
          rvk_created_at: '2026-01-01 00:00:00.123',
        })
        .execute();
    await insert('jti-1');
    await expect(insert('jti-1')).rejects.toThrow();
    await insert(null);
    await insert(null);
    const count = await ds
      .createQueryBuilder()
      .select('COUNT(*)', 'n')
      .from('app_revoked_tokens', 'r')
      .getRawOne<{ n: unknown }>();
    expect(Number(count?.n)).toBe(3);
  });

  it('should be reversible: down drops every table of each migration and up recreates them', async () => {
    const qr = ds.createQueryRunner();
    try {
      expect(MIGRATIONS.map((m) => m.name)).toEqual([
        'InitialSchema1763769600000',
        'RevokedTokens1795305600000',
        'ExportFiles1795392000000',
        'WorkflowRuntime1795478400000',
        'TenantKeyIndexes1795564800000',
        'Jobs1795651200000',
        'Outbox1795737600000',
        'RecordHistory1795824000000',
        'TenantUsage1795910400000',
        'ImportBatches1796183000000',
        'JobVisibility1796262000000',
      ]);
      // Newest first: JobVisibility drops its two columns (and the public id's index) only.
      const columnsOf = async (table: string) =>
        ((await qr.getTable(table))?.columns ?? []).map((c) => c.name);
      expect(await columnsOf('app_jobs')).toContain('job_public_id');
      await ds.undoLastMigration({ transaction: 'each' });
      expect(await columnsOf('app_jobs')).not.toContain('job_public_id');
      expect(await columnsOf('app_export_files')).not.toContain('exf_kind');
      expect(await columnsOf('app_jobs')).toContain('job_finished_at');
      // Then ImportBatches drops its table only.
      await ds.undoLastMigration({ transaction: 'each' });
      for (const def of IMPORT_TABLES) expect(await qr.hasTable(def.name)).toBe(false);
      expect(await qr.hasTable('app_tenant_usage')).toBe(true);
      // Then TenantUsage drops its table only.
      await ds.undoLastMigration({ transaction: 'each' });
      expect(await qr.hasTable('app_tenant_usage')).toBe(false);
      expect(await qr.hasTable('app_jobs')).toBe(true);
      // Then RecordHistory drops its columns and indexes only.
      const auditColumns = async () =>
        ((await qr.getTable('app_audit_logs'))?.columns ?? []).map((c) => c.name);
      for (const c of AUDIT_HISTORY_COLUMNS) expect(await auditColumns()).toContain(c.name);
      await ds.undoLastMigration({ transaction: 'each' });
      for (const c of AUDIT_HISTORY_COLUMNS) expect(await auditColumns()).not.toContain(c.name);
      expect(await auditColumns()).toContain('aud_before');
      // Then Outbox drops its tables only.
      await ds.undoLastMigration({ transaction: 'each' });
      for (const def of OUTBOX_TABLES) expect(await qr.hasTable(def.name)).toBe(false);
      expect(await qr.hasTable('app_jobs')).toBe(true);
      // Then Jobs drops its table only.
      await ds.undoLastMigration({ transaction: 'each' });
      for (const def of JOB_TABLES) expect(await qr.hasTable(def.name)).toBe(false);
      expect(await qr.hasTable('app_export_files')).toBe(true);
      // Then TenantKeyIndexes drops its indexes only.
      const indexNames = async (table: string) =>
        ((await qr.getTable(table))?.indices ?? []).map((i) => i.name);
      expect(await indexNames('demo_customers')).toContain('IDX_demo_customers_cus_tenant_id_cus_id');
      await ds.undoLastMigration({ transaction: 'each' });
      expect(await indexNames('demo_customers')).not.toContain('IDX_demo_customers_cus_tenant_id_cus_id');
      expect(await indexNames('demo_orders')).not.toContain('IDX_demo_orders_ord_tenant_id_ord_id');
      expect(await indexNames('demo_customers')).toContain('IDX_demo_customers_cus_tenant_id_cus_email');
      // Then WorkflowRuntime drops its table, columns and indexes only.
      await ds.undoLastMigration({ transaction: 'each' });
      expect(await qr.hasTable(WORKFLOW_STEP_KEYS_TABLE.name)).toBe(false);
      const queueBefore = await qr.getTable('wft_queue');
      expect(queueBefore!.columns.map((c) => c.name)).not.toContain('wfq_lease_until');
      expect(await qr.hasTable('wft_queue')).toBe(true);
      // Then ExportFiles, then RevokedTokens, each drops its own tables only.
      await ds.undoLastMigration({ transaction: 'each' });
      for (const def of EXPORT_TABLES) expect(await qr.hasTable(def.name)).toBe(false);
      expect(await qr.hasTable('app_revoked_tokens')).toBe(true);
      await ds.undoLastMigration({ transaction: 'each' });
      for (const def of REVOCATION_TABLES) expect(await qr.hasTable(def.name)).toBe(false);
      expect(await qr.hasTable('app_users')).toBe(true);
      await ds.undoLastMigration({ transaction: 'each' });
      for (const def of [...TABLES, ...REVOCATION_TABLES]) expect(await qr.hasTable(def.name)).toBe(false);

      expect((await ds.runMigrations({ transaction: 'each' })).map((m) => m.name)).toEqual([
        'InitialSchema1763769600000',
        'RevokedTokens1795305600000',
        'ExportFiles1795392000000',
        'WorkflowRuntime1795478400000',
        'TenantKeyIndexes1795564800000',
        'Jobs1795651200000',
        'Outbox1795737600000',
        'RecordHistory1795824000000',
        'TenantUsage1795910400000',
        'ImportBatches1796183000000',
        'JobVisibility1796262000000',
      ]);
      expect(await indexNames('demo_orders')).toContain('IDX_demo_orders_ord_tenant_id_ord_id');
      for (const def of [
        ...TABLES,
        ...REVOCATION_TABLES,
        ...EXPORT_TABLES,
        WORKFLOW_STEP_KEYS_TABLE,
        ...JOB_TABLES,
        ...TENANT_USAGE_TABLES,
        ...IMPORT_TABLES,
        ...OUTBOX_TABLES,
      ])
        expect(await qr.hasTable(def.name)).toBe(true);
      const queue = await qr.getTable('wft_queue');
      for (const c of WORKFLOW_QUEUE_COLUMNS) expect(queue!.columns.map((x) => x.name)).toContain(c.name);
      const instances = await qr.getTable('wft_instances');
      for (const c of WORKFLOW_INSTANCE_COLUMNS)
        expect(instances!.columns.map((x) => x.name)).toContain(c.name);
      const revoked = await qr.getTable('app_revoked_tokens');
      expect(revoked!.columns.map((c) => c.name).sort()).toEqual(
        REVOCATION_TABLES[0].columns.map((c) => c.name).sort(),
      );
    } finally {
      await qr.release();
    }
  });
});
