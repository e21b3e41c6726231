import type { EntityInfo, FieldDef } from '../../registry/registry.types';

/** What an audit entry says about the record besides its values (D56). */
export interface EntryMeta {
  version: number;
  changed: string[];
  operationId: string;
}

/** The record's version after a write of a row whose audit data is `auditRaw` (D56). */
export function versionAfter(auditRaw: unknown): number {
  return nextVersion(parseJsonObject(auditRaw).version);
}

/** The identity of a unique value: e-mail addresses compare case-blind (as existsWithValue does). */
export function uniqueKey(field: FieldDef, dbValue: unknown): string {
  const text = typeof dbValue === 'string' ? dbValue : JSON.stringify(dbValue);
  return field.type === 'email' ? text.toLowerCase() : text;
}

/**
 * Spec §2.1's optional `version` of the audit data: 1 on create, +1 on every update and delete. A
 * row written before (or outside) the service has none and counts as version 1.
 */
export function nextVersion(current: unknown): number {
  return (Number.isSafeInteger(current) && (current as number) > 0 ? (current as number) : 1) + 1;
}

export function parseJsonObject(value: unknown): Record<string, unknown> {
  let v = value;
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v);
    } catch {
      return {};
    }
  }
  return v && typeof v === 'object' && !Array.isArray(v) ? { ...(v as Record<string, unknown>) } : {};
}

/**
 * Columns of `app_users` whose change ends the user's sessions: the role (the permissions a token
 * was issued under). Passwords are write-only inputs and say so themselves (revokesTokens).
 */
const SESSION_COLUMNS = new Set(['usr_role_id']);
export const revokesSessions = (entity: EntityInfo, field: FieldDef): boolean =>
  entity.table === 'app_users' && SESSION_COLUMNS.has(field.column);

/** Fields a snapshot (audit before/after) may hold: never hidden ones (password hashes). */
export const snapshotFields = (entity: EntityInfo): FieldDef[] => entity.fields.filter((f) => !f.hidden);
