import { errorMessage } from '../common/errors/error-message';
import { EntityPolicy, normalisePolicy } from '../profile/policy/policy.model';
import type { CatalogProfileRow } from './profile-catalog.repository';

/** The value of `{prefix}:profile:{PRF_CODE}` (spec §4.5): the row, its JSON parsed, its policy. */
export interface CatalogEntry {
  code: string;
  id: number;
  /** prf_tenant_id as a string; null = system-wide. */
  tenantId: string | null;
  objectCode: string;
  mode: string;
  description: string | null;
  policy: EntityPolicy;
  /** The JSON columns parsed (prf_policy, prf_payload, prf_policy_tenantpolicy, prf_policy_projection). */
  json: Record<(typeof JSON_COLUMNS)[number], unknown>;
  encryptionRequired: string | null;
  auditLevel: string | null;
  loadedAt: string;
}

const JSON_COLUMNS = [
  'prf_policy',
  'prf_payload',
  'prf_policy_tenantpolicy',
  'prf_policy_projection',
] as const;

/** One profile that did not make it into the catalog, and why (logged, and in the reload answer). */
export interface CatalogFailure {
  code: string;
  /** prf_tenant_id as a string; null = system-wide. */
  tenantId: string | null;
  stage: 'serialize' | 'store';
  reason: string;
}

function parseColumn(row: CatalogProfileRow, column: (typeof JSON_COLUMNS)[number]): unknown {
  const raw = row[column];
  if (raw === null || raw.trim() === '') return null;
  try {
    return JSON.parse(raw) as unknown;
  } catch (err) {
    throw new Error(`${column} is not JSON (${errorMessage(err)})`);
  }
}

/**
 * The catalog entry of a row, or the reason it cannot be one: a JSON column that does not parse,
 * or a policy the profile loader would refuse (D23: bad mode, bad row filter…).
 */
export function catalogEntry(
  row: CatalogProfileRow,
  loadedAt: string,
): { entry: CatalogEntry } | { failure: CatalogFailure } {
  try {
    const json = {} as CatalogEntry['json'];
    for (const c of JSON_COLUMNS) json[c] = parseColumn(row, c);
    const policy = normalisePolicy({
      modeCode: row.prf_mode_code,
      policy: json.prf_policy,
      tenantPolicy: json.prf_policy_tenantpolicy,
      projection: json.prf_policy_projection,
    });
    return {
      entry: {
        code: row.prf_code,
        id: row.prf_id,
        tenantId: row.prf_tenant_id === null ? null : String(row.prf_tenant_id),
        objectCode: row.prf_object_code,
        mode: row.prf_mode_code,
        description: row.prf_description,
        policy,
        json,
        encryptionRequired: row.prf_policy_encryption_required,
        auditLevel: row.prf_policy_audit_level,
        loadedAt,
      },
    };
  } catch (err) {
    const tenantId = row.prf_tenant_id === null ? null : String(row.prf_tenant_id);
    return { failure: { code: row.prf_code, tenantId, stage: 'serialize', reason: errorMessage(err) } };
  }
}

export function isCatalogEntry(value: unknown): value is CatalogEntry {
  if (!value || typeof value !== 'object') return false;
  const v = value as Record<string, unknown>;
  return typeof v.code === 'string' && (v.tenantId === null || typeof v.tenantId === 'string');
}
