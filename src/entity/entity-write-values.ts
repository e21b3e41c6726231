import { hashPassword } from '../auth/password';
import type { EntityInfo, FieldDef } from '../registry/registry.types';

/**
 * Values on their way into entity tables: `<p>_last_modified` timestamps (D4) and the write-only
 * inputs (passwords). Pure, apart from hashing.
 */

/**
 * `<p>_last_modified` as written: UTC `YYYY-MM-DD HH:MM:SS.mmm`, the literal the seed and sign-up
 * write too, which every dialect's timestamp column takes as is (TIMESTAMP(3), DATETIME(3),
 * DATETIME2(3)) and SQLite keeps as that very text. A JS Date parameter is not used: node-postgres
 * sends a Date as local time with an offset, which a TIMESTAMP WITHOUT TIME ZONE column stores as
 * local wall-clock time, so rows would disagree with the seed's whenever TZ is not UTC.
 */
export function toDbTimestamp(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
}

/**
 * The instant (epoch ms) of a stored timestamp as any driver returns it; null when NULL or
 * unreadable. node-postgres parses TIMESTAMP WITHOUT TIME ZONE as local time, so its wall-clock
 * fields are read back as the UTC instant they were written as; mysql2/mariadb (timezone 'Z') and
 * SQL Server return the UTC instant; SQLite returns the text.
 */
export function fromDbTimestamp(value: unknown, driverType: string): number | null {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) {
    if (driverType !== 'postgres') return value.getTime();
    return Date.UTC(
      value.getFullYear(),
      value.getMonth(),
      value.getDate(),
      value.getHours(),
      value.getMinutes(),
      value.getSeconds(),
      value.getMilliseconds(),
    );
  }
  if (typeof value !== 'string') return null;
  const text = value.trim().replace(' ', 'T');
  // Text without a zone is UTC (what toDbTimestamp writes).
  const ms = Date.parse(/(Z|[+-]\d{2}:?\d{2})$/.test(text) ? text : `${text}Z`);
  return Number.isNaN(ms) ? null : ms;
}

/** A value for the field's column: booleans as 1/0 (every dialect), JSON as text (D1). */
export function toDb(field: FieldDef, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (field.type === 'boolean') return value === true || value === 1 ? 1 : 0;
  if (field.type === 'json') return JSON.stringify(value);
  return value;
}

/**
 * A write-only input: a body key that is not a registry field, whose value is transformed and stored
 * in a hidden field's column and never returned (the password of `users`, stored as its argon2id
 * hash, D12). Declared per entity code here rather than in the registry payload, so that a registry
 * row can never turn a hidden column into a writable one; the target must still be a hidden field of
 * the entity's registry for the input to be accepted.
 */
export interface SecretInput {
  /** The body key, e.g. `password`. */
  input: string;
  /** The hidden registry field whose column receives the transformed value. */
  field: string;
  minLength: number;
  maxLength: number;
  transform(plain: string): Promise<string>;
}

const SECRET_INPUTS: Readonly<Record<string, readonly SecretInput[]>> = {
  users: [
    { input: 'password', field: 'password_hash', minLength: 8, maxLength: 1024, transform: hashPassword },
  ],
};

/** The write-only inputs the entity accepts (its target field exists and is hidden). */
export function secretInputsOf(entity: EntityInfo): SecretInput[] {
  return (SECRET_INPUTS[entity.code] ?? []).filter(
    (s) => entity.fields.find((f) => f.name === s.field)?.hidden === true,
  );
}
