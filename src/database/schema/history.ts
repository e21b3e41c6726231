import { ColumnDef, IndexDef, int, json, str } from './columns';

/**
 * D56: what record history adds to `app_audit_logs` (migration RecordHistory1795824000000).
 *
 * - `aud_version` is the record's version after the change: the `version` of its audit data (spec
 *   §2.1: 1 on create, +1 on every write), taken under the write's row lock, so it grows strictly
 *   per record. Entries written before the migration are numbered 1, 2, … per record in the order
 *   they were written.
 * - `aud_changed` is the JSON list of the fields the change touched (null on entries written before
 *   the migration: their changes are the difference of before and after).
 * - `aud_operation_id` ties the entries of one write together: a delete and every row its cascade
 *   deleted share it, which is what an undelete brings back. Earlier entries take their request id.
 * - `(tenant, entity, record, version)` serves one record's history, newest first, without a scan;
 *   `(tenant, operation)` finds a cascade's entries; `(aud_at)` serves retention.
 */
export const AUDIT_HISTORY_COLUMNS: readonly ColumnDef[] = [
  int('aud_version'),
  json('aud_changed'),
  str('aud_operation_id', 128),
  str('aud_user_email', 255),
];

export const AUDIT_RECORD_VERSION: IndexDef = {
  columns: ['aud_tenant_id', 'aud_entity_code', 'aud_record_id', 'aud_version'],
};
export const AUDIT_OPERATION: IndexDef = { columns: ['aud_tenant_id', 'aud_operation_id'] };
export const AUDIT_AT: IndexDef = { columns: ['aud_at'] };
export const AUDIT_HISTORY_INDEXES: readonly IndexDef[] = [AUDIT_RECORD_VERSION, AUDIT_OPERATION, AUDIT_AT];
