import { id, int, json, str, TableDef, ts } from './columns';

/**
 * Background jobs (ARCHITECTURE `jobs`; leases as D49): one row per job of any kind (exports now;
 * imports, tenant exports and retention later). A worker claims a PENDING row — or a RUNNING one
 * whose lease ran out, so a job survives the crash of the instance that ran it — with the
 * dialect's skip-locked read, and holds it while `job_lease_owner` is its claim and
 * `job_lease_until` lies ahead; every later write of the worker is fenced on that owner, so a
 * cancelled or re-claimed job never takes a stale result. `job_input` keeps what the job needs to
 * rebuild its context (with `job_tenant_id`, `job_created_by`, `job_request_id`); `job_result` and
 * `job_error` are JSON. No foreign keys: job rows are operational records that must never stop a
 * tenant or user row from being removed (as app_revoked_tokens and app_export_files).
 */
export const JOBS_TABLE: TableDef = {
  name: 'app_jobs',
  prefix: 'job',
  columns: [
    id('job'),
    int('job_tenant_id', false),
    str('job_kind', 50, false),
    str('job_status', 20, false),
    int('job_created_by'),
    str('job_request_id', 100),
    json('job_input'),
    int('job_processed', false, 0),
    int('job_total'),
    json('job_result'),
    json('job_error'),
    str('job_lease_owner', 100),
    ts('job_lease_until'),
    int('job_attempts', false, 0),
    ts('job_run_after'),
    ts('job_created_at', false),
    ts('job_started_at'),
    ts('job_updated_at', false),
    ts('job_finished_at'),
  ],
  indices: [
    // Claims: PENDING rows, and RUNNING rows whose lease ran out.
    { columns: ['job_status', 'job_lease_until'] },
    // Reads and admission counts, always within a tenant.
    { columns: ['job_tenant_id', 'job_kind', 'job_status'] },
    // The purge of finished jobs.
    { columns: ['job_finished_at'] },
  ],
};

/** The tables of migration Jobs1795651200000, which creates exactly these. */
export const JOB_TABLES: readonly TableDef[] = [JOBS_TABLE];
