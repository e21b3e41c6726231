import type { FieldError } from '../common/errors/app-error';
import { writableFieldNames } from '../profile/policy/masking';
import type { EntityPolicy } from '../profile/policy/policy.model';
import type { EntityInfo, FieldDef } from '../registry/registry.types';
import { coerce } from './entity-query';
import { secretInputsOf, SecretInput } from './entity-write-values';

/**
 * The checks of a write payload that need no database (spec §4.3 create rules 1-3, update rule 2):
 * mass assignment, required, type, length, range, pattern, e-mail format. What needs the database
 * (value sets, uniqueness, references) is checked by EntityWriteService on the values accepted here.
 */

export type WriteOperation = 'create' | 'update';

/** The body key (and If-Match header) that carries the optimistic-concurrency token on PUT (D24). */
export const LAST_MODIFIED_KEY = 'lastModified';

export interface AcceptedValue {
  field: FieldDef;
  /** Coerced to the field's type (JSON form; booleans 1/0, see coerce). */
  value: unknown;
}

export interface CheckedPayload {
  /** Accepted registry fields, in the order of the body. */
  values: AcceptedValue[];
  /** Accepted write-only inputs (plain values; transformed later, outside any transaction). */
  secrets: Array<{ secret: SecretInput; plain: string }>;
  errors: FieldError[];
}

const EMAIL = /^[^@\s]+@[^@\s.]+(\.[^@\s.]+)+$/;
const INT_MAX = 2147483647;

/**
 * Columns no request ever writes: key, tenant, soft delete, audit, supplementary data and the
 * concurrency timestamp (spec 2.1, D4). `<p>_status` is not among them: a registry field may expose
 * it (users.status), and is then an ordinary field.
 */
export function systemColumns(entity: EntityInfo): Set<string> {
  const c = entity.columns;
  return new Set(
    [entity.primaryKeyColumn, c.tenant, c.isDeleted, c.auditData, c.addDtls, c.lastModified].map((x) =>
      x.toLowerCase(),
    ),
  );
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const isBlank = (value: unknown): boolean =>
  value === null || (typeof value === 'string' && value.trim() === '');

/** One value against its field's rules; `{value}` or `{error}`. */
export function validateValue(field: FieldDef, raw: unknown): { value?: unknown; error?: string } {
  if (isBlank(raw)) {
    if (field.required) return { error: 'is required' };
    if (raw === null) return { value: null };
  }
  if (raw === undefined) return { error: 'must have a value' };
  if (field.type === 'json') return { value: raw };

  let value: unknown;
  if (
    (field.type === 'text' || field.type === 'email' || field.type === 'select') &&
    typeof raw === 'string'
  ) {
    value = raw;
  } else {
    const c = coerce(field, raw);
    if (c.error) return { error: c.error };
    value = c.value;
  }

  if (typeof value === 'string') {
    if (field.type === 'email') {
      value = value.trim().toLowerCase();
      if (!EMAIL.test(value as string)) return { error: 'must be an e-mail address' };
    }
    const s = value as string;
    if (field.maxLength !== undefined && [...s].length > field.maxLength)
      return { error: `must be at most ${field.maxLength} characters` };
    if (field.pattern !== undefined && !new RegExp(field.pattern).test(s))
      return { error: 'does not match the required pattern' };
  }
  if (typeof value === 'number') {
    if (
      field.type === 'integer' &&
      field.min === undefined &&
      field.max === undefined &&
      Math.abs(value) > INT_MAX
    )
      return { error: 'is out of range' };
    if (field.min !== undefined && value < field.min) return { error: `must be at least ${field.min}` };
    if (field.max !== undefined && value > field.max) return { error: `must be at most ${field.max}` };
  }
  return { value };
}

/**
 * Mass assignment and field rules of a create or update body. Refused (each listed): the key, the
 * tenant column and every other system column, whether named by a field or by column name; read-only
 * and hidden fields; names that are not registry fields; fields outside the policy's writableFields.
 * Accepted besides the fields: the entity's write-only inputs (users.password), and on update the
 * `lastModified` token, which the caller reads separately.
 */
export function checkPayload(
  entity: EntityInfo,
  policy: EntityPolicy,
  body: unknown,
  op: WriteOperation,
): CheckedPayload {
  const out: CheckedPayload = { values: [], secrets: [], errors: [] };
  if (!isPlainObject(body)) {
    out.errors.push({ field: 'body', error: 'must be a JSON object' });
    return out;
  }
  const writable = new Set(writableFieldNames(policy, entity.fields));
  const system = systemColumns(entity);
  const secrets = secretInputsOf(entity).filter(
    (s) => policy.writableFields === null || policy.writableFields.includes(s.input),
  );
  const columnNames = new Set(entity.fields.map((f) => f.column.toLowerCase()));

  for (const [key, raw] of Object.entries(body)) {
    if (op === 'update' && key === LAST_MODIFIED_KEY) continue;
    const secret = secrets.find((s) => s.input === key);
    if (secret) {
      if (typeof raw !== 'string' || raw.length < secret.minLength || raw.length > secret.maxLength) {
        out.errors.push({
          field: key,
          error: `must be a string of ${secret.minLength} to ${secret.maxLength} characters`,
        });
      } else out.secrets.push({ secret, plain: raw });
      continue;
    }
    const field = entity.fields.find((f) => f.name === key);
    if (!field) {
      const lower = key.toLowerCase();
      out.errors.push({
        field: key,
        error:
          system.has(lower) || lower === 'id' || lower === 'tenant_id' || key === LAST_MODIFIED_KEY
            ? 'is set by the service and cannot be written'
            : columnNames.has(lower)
              ? 'is a column name; write the field name instead'
              : `is not a field of ${entity.code}`,
      });
      continue;
    }
    if (field.hidden) out.errors.push({ field: key, error: 'cannot be written' });
    else if (field.readOnly || system.has(field.column.toLowerCase()))
      out.errors.push({ field: key, error: 'is read-only' });
    else if (!writable.has(key)) out.errors.push({ field: key, error: 'is not writable under the profile' });
    else {
      const r = validateValue(field, raw);
      if (r.error) out.errors.push({ field: key, error: r.error });
      else out.values.push({ field, value: r.value });
    }
  }

  if (op === 'create') {
    for (const f of entity.fields) {
      if (f.required && !f.readOnly && !f.hidden && !Object.prototype.hasOwnProperty.call(body, f.name))
        out.errors.push({ field: f.name, error: 'is required' });
    }
  }
  return out;
}
