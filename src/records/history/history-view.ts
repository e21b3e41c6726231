import { applyProjection, visibleFields } from '../../profile/policy/masking';
import type { EntityPolicy } from '../../profile/policy/policy.model';
import type { EntityInfo } from '../../registry/registry.types';
import type { Row } from '../records-read.repository';
import type { AuditRow } from './history.repository';

export type HistoryAction = 'created' | 'updated' | 'deleted' | 'restored';

export interface HistoryChange {
  field: string;
  before: unknown;
  after: unknown;
}

export interface HistoryEntry {
  version: number;
  action: HistoryAction;
  at: string;
  by: { id: number | null; email: string | null };
  changes: HistoryChange[];
}

const ACTIONS: Record<string, HistoryAction> = {
  'entity.created': 'created',
  'entity.updated': 'updated',
  'entity.deleted': 'deleted',
  'entity.restored': 'restored',
};

export const actionOf = (event: string): HistoryAction => ACTIONS[event] ?? 'updated';

/** The fields an entry changed: as it recorded them, or (before D56) the difference of its values. */
function changedFields(row: AuditRow): string[] {
  if (row.changed) return row.changed;
  const before = row.before ?? {};
  const after = row.after ?? {};
  if (row.event === 'entity.deleted') return [];
  if (row.event === 'entity.created')
    return Object.keys(after).filter((k) => after[k] !== null && after[k] !== undefined);
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...keys].filter((k) => JSON.stringify(before[k]) !== JSON.stringify(after[k]));
}

/**
 * One audit entry as the caller may see it (D56, D43): only fields visible under the profile, the
 * masked ones masked on both sides; hidden fields, the key and write-only inputs (a new password's
 * `[changed]` marker) never appear.
 */
export function presentEntry(entity: EntityInfo, policy: EntityPolicy, row: AuditRow): HistoryEntry {
  const action = actionOf(row.event);
  const visible = new Set(visibleFields(policy, entity.fields));
  const key = entity.fields.find((f) => f.column === entity.primaryKeyColumn)?.name;
  const before = applyProjection(row.before ?? {}, policy, entity.fields);
  const after = applyProjection(row.after ?? {}, policy, entity.fields);
  const changes =
    action === 'deleted'
      ? []
      : changedFields(row)
          .filter((f) => visible.has(f) && f !== key)
          .map((field) => ({
            field,
            before: action === 'created' ? null : (before[field] ?? null),
            after: after[field] ?? null,
          }));
  return {
    version: row.version,
    action,
    at: new Date(row.at).toISOString(),
    by: { id: row.userId, email: row.userEmail },
    changes,
  };
}

/** The record as the caller may see it: projected and masked. */
export function presentRecordValues(entity: EntityInfo, policy: EntityPolicy, record: Row): Row {
  return applyProjection(record, policy, entity.fields);
}
