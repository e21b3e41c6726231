import { ColumnDef, id, IndexDef, int, str, TableDef, ts } from './columns';
import { AUDIT_HISTORY_COLUMNS } from './history';
import { EXPORT_FILE_KIND_COLUMNS, JOB_PUBLIC_ID_COLUMNS } from './job-visibility';

/**
 * D49: what the workflow engine adds to the initial schema's wft_* tables (migration
 * WorkflowRuntime1795478400000).
 *
 * - `wfi_step_seq` is the instance's fencing counter: every queue row carries the value it was
 *   queued at (`wfq_step_seq`), and a step commits only while the two are equal, incrementing it
 *   under the instance's row lock. A row delivered twice (an expired lease) therefore commits once.
 * - `wfi_request_id` is the start request's id, which the workers' log lines carry.
 * - `wfq_lease_until` is the lease of a claimed row; an expired lease is claimed again.
 *   `wfq_kind` is `step` or `timeout` (an approval's `timeoutS`).
 * - `wft_step_keys` is the idempotency key of each committed step (instance, step sequence — which
 *   fixes node and attempt), written in the step's own transaction; its unique index makes a second
 *   commit of the same step fail even if the fencing read were bypassed.
 * - node states become one row per (instance, node), enforced by a unique index.
 */
export const WORKFLOW_INSTANCE_COLUMNS: readonly ColumnDef[] = [
  str('wfi_request_id', 100),
  int('wfi_step_seq', false, 0),
];

export const WORKFLOW_QUEUE_COLUMNS: readonly ColumnDef[] = [
  str('wfq_kind', 20),
  int('wfq_step_seq', false, 0),
  ts('wfq_lease_until'),
];

export const NODE_STATE_UNIQUE: IndexDef = { columns: ['wns_instance_id', 'wns_node_id'], unique: true };
export const QUEUE_INSTANCE_SEQ: IndexDef = { columns: ['wfq_instance_id', 'wfq_step_seq'] };

export const WORKFLOW_STEP_KEYS_TABLE: TableDef = {
  name: 'wft_step_keys',
  prefix: 'wsk',
  columns: [
    id('wsk'),
    int('wsk_tenant_id', false),
    int('wsk_instance_id', false),
    int('wsk_step_seq', false),
    str('wsk_node_id', 100, false),
    int('wsk_attempt', false),
    ts('wsk_created_at', false),
  ],
  indices: [{ columns: ['wsk_instance_id', 'wsk_step_seq'], unique: true }],
  foreignKeys: [{ column: 'wsk_instance_id', table: 'wft_instances', refColumn: 'wfi_id' }],
};

/** Columns later migrations add to the initial schema's tables, by table. */
export const ADDED_COLUMNS: Readonly<Record<string, readonly ColumnDef[]>> = {
  wft_instances: WORKFLOW_INSTANCE_COLUMNS,
  wft_queue: WORKFLOW_QUEUE_COLUMNS,
  app_audit_logs: AUDIT_HISTORY_COLUMNS,
  app_jobs: JOB_PUBLIC_ID_COLUMNS,
  app_export_files: EXPORT_FILE_KIND_COLUMNS,
};
