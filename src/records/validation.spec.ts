import { normalisePolicy } from '../profile/policy/policy.model';
import { conventionColumnsOf } from '../registry/registry-entity';
import type { EntityInfo, FieldDef } from '../registry/registry.types';
import { checkPayload, validateValue } from './validation';
import { fromDbTimestamp, toDbTimestamp } from '../database/dialect/timestamps';

const field = (f: Partial<FieldDef> & Pick<FieldDef, 'name' | 'column' | 'type'>): FieldDef => ({
  required: false,
  unique: false,
  readOnly: false,
  hidden: false,
  ...f,
});

const entity = (code: string, fields: FieldDef[]): EntityInfo => ({
  code,
  registryId: 1,
  registryTenantId: null,
  description: null,
  type: 'TABLE',
  dbType: null,
  supported: true,
  connectionCode: null,
  table: 'demo_things',
  primaryKeyColumn: 'thg_id',
  prefix: 'thg_',
  fields,
  relations: [],
  maintainedBy: 'tenant',
  columns: conventionColumnsOf('thg_'),
});

const THINGS = entity('things', [
  field({ name: 'id', column: 'thg_id', type: 'integer', readOnly: true }),
  field({ name: 'code', column: 'thg_code', type: 'text', required: true, pattern: '^[A-Z]{3}$' }),
  field({ name: 'note', column: 'thg_note', type: 'text' }),
  field({ name: 'secret', column: 'thg_secret', type: 'text', hidden: true }),
  field({ name: 'owner', column: 'thg_tenant_id', type: 'integer' }),
]);

describe('checkPayload', () => {
  const open = normalisePolicy({ modeCode: 'FULL', policy: null });

  it('should accept writable fields and coerce them', () => {
    expect(checkPayload(THINGS, open, { code: 'ABC', note: 7 }, 'create')).toMatchObject({
      errors: [],
      values: [{ value: 'ABC' }, { value: '7' }],
    });
  });

  it('should refuse fields outside writableFields, read-only, hidden, system-column and unknown fields', () => {
    const policy = normalisePolicy({ modeCode: 'FULL', policy: { writableFields: ['code'] } });
    const r = checkPayload(
      THINGS,
      policy,
      { code: 'ABC', note: 'x', id: 1, secret: 's', owner: 2, thg_code: 'X', nope: 1 },
      'create',
    );
    expect(r.errors).toEqual([
      { field: 'note', error: 'is not writable under the profile' },
      { field: 'id', error: 'is read-only' },
      { field: 'secret', error: 'cannot be written' },
      { field: 'owner', error: 'is read-only' },
      { field: 'thg_code', error: 'is a column name; write the field name instead' },
      { field: 'nope', error: 'is not a field of things' },
    ]);
  });

  it('should require required fields on create only, and refuse clearing them on update', () => {
    expect(checkPayload(THINGS, open, {}, 'create').errors).toEqual([
      { field: 'code', error: 'is required' },
    ]);
    expect(checkPayload(THINGS, open, { note: 'x' }, 'update').errors).toEqual([]);
    expect(checkPayload(THINGS, open, { code: null }, 'update').errors).toEqual([
      { field: 'code', error: 'is required' },
    ]);
  });

  it('should check the pattern', () => {
    expect(checkPayload(THINGS, open, { code: 'abc' }, 'create').errors).toEqual([
      { field: 'code', error: 'does not match the required pattern' },
    ]);
  });

  it('should accept a password only where a hidden target field is declared (users)', () => {
    const users = entity('users', [
      field({ name: 'password_hash', column: 'usr_password_hash', type: 'text', hidden: true }),
    ]);
    expect(checkPayload(users, open, { password: 'long-enough' }, 'create').secrets).toHaveLength(1);
    expect(checkPayload(THINGS, open, { password: 'long-enough' }, 'update').errors).toEqual([
      { field: 'password', error: 'is not a field of things' },
    ]);
  });
});

describe('validateValue', () => {
  it.each([
    [{ type: 'integer' as const }, '12', 12],
    [{ type: 'integer' as const, min: 0 }, -1, 'must be at least 0'],
    [{ type: 'numeric' as const, max: 10 }, 10.5, 'must be at most 10'],
    [{ type: 'email' as const }, ' A@B.example ', 'a@b.example'],
    [{ type: 'email' as const }, 'a@b', 'must be an e-mail address'],
    [{ type: 'text' as const, maxLength: 3 }, 'abcd', 'must be at most 3 characters'],
    [{ type: 'boolean' as const }, true, 1],
    [{ type: 'date' as const }, '2025-02-30x', 'must be a date (YYYY-MM-DD)'],
    [{ type: 'date' as const }, '2025-02-30', 'must be a calendar date (YYYY-MM-DD)'],
    [{ type: 'email' as const }, 'x@b.cd<script>', 'must be an e-mail address'],
    [{ type: 'email' as const }, 'x@b.c;d', 'must be an e-mail address'],
    [{ type: 'email' as const }, 'x@-b.com', 'must be an e-mail address'],
    [
      { type: 'email' as const },
      'x@b.cd\u202e',
      'must not contain bidirectional control characters (U+202A-U+202E, U+2066-U+2069)',
    ],
    [{ type: 'email' as const }, '\ud800x@b.example', 'must be well-formed Unicode text'],
    [{ type: 'text' as const }, 'Line 1\r\n\tLine 2\n', 'Line 1\r\n\tLine 2\n'],
    [
      { type: 'text' as const },
      'ring\u0007',
      'must not contain control characters (other than tab and line breaks)',
    ],
    [
      { type: 'text' as const },
      'evil\u202egnp.exe',
      'must not contain bidirectional control characters (U+202A-U+202E, U+2066-U+2069)',
    ],
    [{ type: 'text' as const }, 'שלום\u200f (Hebrew)', 'שלום\u200f (Hebrew)'],
    [{ type: 'select' as const }, 'gold\n', 'must not contain control characters'],
    [{ type: 'json' as const }, { a: [1] }, { a: [1] }],
  ])('%j %j → %j', (rules, raw, expected) => {
    const r = validateValue(field({ name: 'f', column: 'f', ...rules }), raw);
    expect(r.error ?? r.value).toEqual(expected);
  });
});

describe('last_modified timestamps (D4)', () => {
  it('should round-trip milliseconds through text, UTC Dates and node-postgres local Dates', () => {
    const ms = Date.UTC(2025, 5, 30, 23, 59, 58, 7);
    const text = toDbTimestamp(ms);
    expect(text).toBe('2025-06-30 23:59:58.007');
    expect(fromDbTimestamp(text, 'better-sqlite3')).toBe(ms);
    expect(fromDbTimestamp(new Date(ms), 'mariadb')).toBe(ms);
    // node-postgres reads TIMESTAMP WITHOUT TIME ZONE as local wall-clock time.
    expect(fromDbTimestamp(new Date(2025, 5, 30, 23, 59, 58, 7), 'postgres')).toBe(ms);
    expect(fromDbTimestamp(null, 'postgres')).toBeNull();
  });
});
