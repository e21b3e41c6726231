import { isDeepStrictEqual } from 'node:util';
import type { FieldError } from '../common/errors/app-error';
import { emailProblem, storedTextProblem, wellFormedProblem } from '../common/validation/text-rules';
import { visibleFields, writableFieldNames } from '../profile/policy/masking';
import type { EntityPolicy } from '../profile/policy/policy.model';
import type { EntityInfo, FieldDef } from '../registry/registry.types';
import { coerce } from './query/coerce';
import { secretInputsOf, SecretInput } from './secret-inputs';

/**
 * The checks of a write payload that need no database (spec §4.3 create rules 1-3, update rule 2):
 * mass assignment, required, type, length, range, pattern, e-mail format. What needs the database
 * (value sets, uniqueness, references) is checked by EntityWriteService on the values accepted here.
 */

export type WriteOperation = 'create' | 'update';

export { LAST_MODIFIED_KEY } from './concurrency-token';
import { LAST_MODIFIED_KEY } from './concurrency-token';

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
  /**
   * Update only: body keys of fields a read shows but the body may not simply write — masked,
   * read-only (the key included) or not writable under the profile. A value equal to what a read
   * shows is an echo of the record and is ignored (D43); anything else is checked as usual once
   * the stored row is known (`resolveEchoes`).
   */
  deferred: Array<{ key: string; field: FieldDef; raw: unknown }>;
}

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
    if (field.type === 'email') value = value.trim().toLowerCase();
    const s = value as string;
    // Free text may span lines; an e-mail address or a value-set code may not (issue 21 #7).
    const problem = field.type === 'email' ? emailProblem(s) : storedTextProblem(s, field.type === 'text');
    if (problem) return { error: problem };
    if (field.maxLength !== undefined && [...s].length > field.maxLength)
      return { error: `must be at most ${field.maxLength} characters` };
    if (field.pattern !== undefined && !new RegExp(field.pattern).test(s))
      return { error: 'does not match the required pattern' };
  }
  if (typeof value === 'number') {
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
  const out: CheckedPayload = { values: [], secrets: [], errors: [], deferred: [] };
  if (!isPlainObject(body)) {
    out.errors.push({ field: 'body', error: 'must be a JSON object' });
    return out;
  }
  const writable = new Set(writableFieldNames(policy, entity.fields));
  const visible = new Set(visibleFields(policy, entity.fields));
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
      } else {
        // A lone surrogate would be hashed as U+FFFD: two different passwords would be one.
        const problem = wellFormedProblem(raw);
        if (problem) out.errors.push({ field: key, error: problem });
        else out.secrets.push({ secret, plain: raw });
      }
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
    const echoable =
      op === 'update' &&
      visible.has(key) &&
      (policy.masking[key] !== undefined ||
        field.readOnly === true ||
        system.has(field.column.toLowerCase()) ||
        !writable.has(key));
    if (echoable) out.deferred.push({ key, field, raw });
    else checkField(field, raw, writable, system, out);
  }

  if (op === 'create') {
    for (const f of entity.fields) {
      if (f.required && !f.readOnly && !f.hidden && !Object.prototype.hasOwnProperty.call(body, f.name))
        out.errors.push({ field: f.name, error: 'is required' });
    }
  }
  return out;
}

/** The mass-assignment and value rules of one registry field of a body. */
function checkField(
  field: FieldDef,
  raw: unknown,
  writable: Set<string>,
  system: Set<string>,
  out: Pick<CheckedPayload, 'values' | 'errors'>,
): void {
  const key = field.name;
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

/**
 * D43: the deferred keys of an update against the record as a read shows it (`shown`: projection
 * and masking applied). A value equal to the shown one — the masked phone, the id, a field the
 * profile does not let the caller write — is the client saving what it read and is ignored, never
 * stored; any other value is checked like every body key (a new clear value of a masked field is
 * written where the field is writable).
 */
export function resolveEchoes(
  entity: EntityInfo,
  policy: EntityPolicy,
  deferred: CheckedPayload['deferred'],
  shown: Record<string, unknown>,
): Pick<CheckedPayload, 'values' | 'errors'> {
  const out: Pick<CheckedPayload, 'values' | 'errors'> = { values: [], errors: [] };
  const writable = new Set(writableFieldNames(policy, entity.fields));
  const system = systemColumns(entity);
  for (const { field, raw } of deferred) {
    if (isDeepStrictEqual(raw, shown[field.name])) continue;
    checkField(field, raw, writable, system, out);
  }
  return out;
}
