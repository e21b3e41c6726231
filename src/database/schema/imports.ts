import { id, int, json, TableDef, ts } from './columns';

/**
 * The idempotency record of an import (D53): one row per batch an import job committed, written in
 * that batch's own transaction, so a job claimed again after its worker died skips exactly the
 * batches that were written (a row is never written twice) and still reports them: the batch's
 * counts, and in `imb_report` its row errors and failed rows (for the error file). The unique index
 * (job, batch) makes a second commit of one batch fail. No foreign key, like the other operational
 * tables: an erased tenant's rows are deleted.
 */
export const IMPORT_BATCHES_TABLE: TableDef = {
  name: 'app_import_batches',
  prefix: 'imb',
  columns: [
    id('imb'),
    int('imb_tenant_id', false),
    int('imb_job_id', false),
    int('imb_batch', false),
    int('imb_rows', false),
    int('imb_created', false),
    int('imb_updated', false),
    int('imb_skipped', false),
    int('imb_failed', false),
    json('imb_report'),
    ts('imb_created_at', false),
  ],
  indices: [
    { columns: ['imb_job_id', 'imb_batch'], unique: true },
    { columns: ['imb_tenant_id', 'imb_job_id'] },
  ],
};

/** The tables of migration ImportBatches1796183000000, which creates exactly these. */
export const IMPORT_TABLES: readonly TableDef[] = [IMPORT_BATCHES_TABLE];
