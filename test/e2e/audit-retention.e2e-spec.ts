import type { DataSource } from 'typeorm';
import { DatabaseService } from '../../src/database/database.service';
import { toDbTimestamp } from '../../src/database/dialect/timestamps';
import { AUDIT_RETENTION_KIND, AuditRetentionJob } from '../../src/jobs/audit-retention.job';
import { startTestApp, TestApp, waitFor } from '../support/test-app';

const DAY = 24 * 3600 * 1000;

/**
 * D56's retention: AUDIT_RETENTION_DAYS for every tenant, a tenant's own
 * `tnt_add_dtls.auditRetentionDays` over it (0 = forever), pruned by one leased job per period
 * however many times the period is scheduled, counted by audit_entries_pruned_total.
 */
describe('Audit retention (D56)', () => {
  let t: TestApp;
  let ds: DataSource;

  beforeAll(async () => {
    t = await startTestApp({
      label: 'audit_retention',
      env: { AUDIT_RETENTION_DAYS: '30', AUDIT_RETENTION_INTERVAL_MS: '3600000', METRICS_ENABLED: 'true' },
    });
    ds = t.app.get(DatabaseService).dataSource;
  });

  afterAll(async () => {
    await t?.close();
  });

  async function setRetention(tenantId: number, days: number): Promise<void> {
    const row = await ds
      .createQueryBuilder()
      .select('t.tnt_add_dtls', 'd')
      .from('app_tenants', 't')
      .where('t.tnt_id = :id', { id: tenantId })
      .getRawOne<{ d: unknown }>();
    const current =
      typeof row?.d === 'string' ? (JSON.parse(row.d) as object) : ((row?.d as object | null) ?? {});
    await ds
      .createQueryBuilder()
      .update('app_tenants')
      .set({ tnt_add_dtls: JSON.stringify({ ...current, auditRetentionDays: days }) })
      .where('tnt_id = :id', { id: tenantId })
      .execute();
  }

  async function entry(tenantId: number, recordId: string, ageDays: number): Promise<void> {
    await ds
      .createQueryBuilder()
      .insert()
      .into('app_audit_logs', [
        'aud_tenant_id',
        'aud_user_id',
        'aud_event',
        'aud_entity_code',
        'aud_record_id',
        'aud_after',
        'aud_request_id',
        'aud_at',
        'aud_version',
      ])
      .values({
        aud_tenant_id: tenantId,
        aud_user_id: 1,
        aud_event: 'entity.updated',
        aud_entity_code: 'retention_probe',
        aud_record_id: recordId,
        aud_after: '{}',
        aud_request_id: 'retention-test',
        aud_at: toDbTimestamp(Date.now() - ageDays * DAY),
        aud_version: 1,
      })
      .execute();
  }

  const remaining = async (): Promise<string[]> =>
    (
      await ds
        .createQueryBuilder()
        .select('a.aud_record_id', 'r')
        .from('app_audit_logs', 'a')
        .where('a.aud_entity_code = :code', { code: 'retention_probe' })
        .orderBy('a.aud_record_id')
        .getRawMany<{ r: unknown }>()
    ).map((x) => String(x.r));

  it('should prune by the default and each tenant’s own retention, once per period, and count it', async () => {
    await setRetention(2, 5);
    await setRetention(3, 0);
    await entry(1, 't1-old', 40);
    await entry(1, 't1-new', 10);
    await entry(2, 't2-old', 10);
    await entry(2, 't2-new', 2);
    await entry(3, 't3-ancient', 400);

    const retention = t.app.get(AuditRetentionJob);
    const now = Date.now();
    // Every instance schedules each period; one job is queued for it, whoever asks first.
    const ids = await Promise.all([
      retention.schedule(now),
      retention.schedule(now),
      retention.schedule(now),
    ]);
    const queued = ids.filter((id) => id !== undefined);
    expect(queued).toHaveLength(1);
    const jobs = ds
      .createQueryBuilder()
      .select('j.job_id', 'id')
      .addSelect('j.job_status', 'status')
      .addSelect('j.job_result', 'result')
      .from('app_jobs', 'j')
      .where('j.job_kind = :kind', { kind: AUDIT_RETENTION_KIND });
    await waitFor(async () =>
      (await jobs.getRawMany<{ status: string }>()).every((j) => j.status === 'COMPLETED'),
    );
    const done = await jobs.getRawMany<{ id: unknown; result: unknown }>();
    expect(done).toHaveLength(1);
    const result = typeof done[0].result === 'string' ? JSON.parse(done[0].result) : done[0].result;
    expect(result).toEqual({ pruned: 2 });
    expect(await remaining()).toEqual(['t1-new', 't2-new', 't3-ancient']);

    const metrics = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).toMatch(/^audit_entries_pruned_total 2$/m);

    // The same period again: nothing is queued; the next one runs and finds nothing more to prune.
    expect(await retention.schedule(now)).toBeUndefined();
    expect(await retention.schedule(now + 3600000)).toEqual(expect.any(Number));
    await waitFor(async () =>
      (await jobs.getRawMany<{ status: string }>()).every((j) => j.status === 'COMPLETED'),
    );
    expect(await remaining()).toEqual(['t1-new', 't2-new', 't3-ancient']);
  });
});
