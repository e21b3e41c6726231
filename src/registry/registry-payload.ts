import type { FieldDef, FieldType, RelationDef } from './registry.types';

/**
 * Parsing, validation and merging of `obj_payload` (`{fields, relations}`, see the registry notes of
 * docs/behaviour-and-decisions.md). Pure functions: no I/O, so every rule is unit-tested. Column
 * names found here are later written into SQL by other modules, so anything that is not a plain
 * identifier is refused: the registry is the only source of identifiers, never a request.
 */

/** An identifier the data layer may put into SQL (quoted or not) without escaping. */
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
/** A table, view or function name, optionally schema-qualified (`schema.table`). */
const TABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}(\.[A-Za-z_][A-Za-z0-9_]{0,127})?$/;
/** A column prefix such as `cus_` (spec 2.1). */
const PREFIX = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
/** An entity code as it appears in URLs and in `obj_code` (VARCHAR(100)). */
const ENTITY_CODE = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$/;

const FIELD_TYPES: ReadonlySet<string> = new Set<FieldType>([
  'text',
  'email',
  'integer',
  'numeric',
  'date',
  'boolean',
  'select',
  'json',
]);

const MAX_PATTERN_LENGTH = 1000;

export function isSqlIdentifier(value: unknown): value is string {
  return typeof value === 'string' && IDENTIFIER.test(value);
}

export function isTableName(value: unknown): value is string {
  return typeof value === 'string' && TABLE_NAME.test(value);
}

export function isColumnPrefix(value: unknown): value is string {
  return typeof value === 'string' && PREFIX.test(value);
}

export function isEntityCode(value: unknown): value is string {
  return typeof value === 'string' && ENTITY_CODE.test(value);
}

/** A registry row whose configuration cannot be used; the entity is then treated as not found. */
export class RegistryConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RegistryConfigError';
  }
}

type RawObject = Record<string, unknown>;

/** A payload after JSON and shape checks, before field validation (merging works on this form). */
export interface RawPayload {
  fields: RawObject[];
  relations: RawObject[];
}

const isObject = (value: unknown): value is RawObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const relationKey = (r: RawObject): string => `${String(r.entity)}\u0000${String(r.foreignKey)}`;

/**
 * `obj_payload` of one row: NULL or empty means no metadata; anything else must be a JSON object
 * whose `fields` and `relations` (both optional) are arrays of objects, fields with a string `name`
 * used once, relations with string `entity` and `foreignKey`. Unknown top-level keys are ignored.
 */
export function parseRawPayload(value: unknown): RawPayload {
  if (value === null || value === undefined || value === '') return { fields: [], relations: [] };
  let parsed: unknown = value;
  if (typeof value === 'string') {
    try {
      parsed = JSON.parse(value);
    } catch {
      throw new RegistryConfigError('obj_payload is not valid JSON');
    }
  }
  if (!isObject(parsed)) throw new RegistryConfigError('obj_payload is not a JSON object');
  const fields = arrayOfObjects(parsed.fields, 'fields');
  const relations = arrayOfObjects(parsed.relations, 'relations');
  const names = new Set<string>();
  for (const f of fields) {
    if (typeof f.name !== 'string') throw new RegistryConfigError('a field has no name');
    if (names.has(f.name)) throw new RegistryConfigError(`field "${f.name}" is defined twice`);
    names.add(f.name);
  }
  const keys = new Set<string>();
  for (const r of relations) {
    if (typeof r.entity !== 'string' || typeof r.foreignKey !== 'string') {
      throw new RegistryConfigError('a relation lacks entity or foreignKey');
    }
    if (keys.has(relationKey(r))) {
      throw new RegistryConfigError(`relation ${r.entity}.${r.foreignKey} is defined twice`);
    }
    keys.add(relationKey(r));
  }
  return { fields, relations };
}

function arrayOfObjects(value: unknown, key: string): RawObject[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || !value.every(isObject)) {
    throw new RegistryConfigError(`obj_payload.${key} is not an array of objects`);
  }
  return value;
}

/**
 * Tenant over system (spec 4.3 read rule 2, D20). Fields are matched by `name`: a tenant field's
 * properties are laid over the system field's (so `{name, maxLength}` changes only the length, and a
 * property set to null drops it); fields the system row lacks are appended in the tenant's order.
 * Relations are matched by entity + foreignKey, the tenant's entry replacing the system's.
 */
export function mergeRawPayloads(system: RawPayload | undefined, tenant: RawPayload | undefined): RawPayload {
  const base = system ?? { fields: [], relations: [] };
  if (!tenant) return base;
  const fields = new Map<string, RawObject>(base.fields.map((f) => [String(f.name), f]));
  for (const f of tenant.fields) {
    const name = String(f.name);
    fields.set(name, { ...(fields.get(name) ?? {}), ...f });
  }
  const relations = new Map<string, RawObject>(base.relations.map((r) => [relationKey(r), r]));
  for (const r of tenant.relations) relations.set(relationKey(r), r);
  return { fields: [...fields.values()], relations: [...relations.values()] };
}

/** null and undefined both mean "not set" (a tenant override sets null to drop a property). */
const present = (value: unknown): boolean => value !== undefined && value !== null;

function optionalBoolean(f: RawObject, key: string, name: string): boolean {
  const value = f[key];
  if (!present(value)) return false;
  if (typeof value !== 'boolean') throw new RegistryConfigError(`field "${name}": ${key} is not a boolean`);
  return value;
}

function optionalNumber(f: RawObject, key: string, name: string): number | undefined {
  const value = f[key];
  if (!present(value)) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new RegistryConfigError(`field "${name}": ${key} is not a finite number`);
  }
  return value;
}

/** Validates one (merged) field definition. */
export function parseField(f: RawObject, primaryKeyColumn?: string): FieldDef {
  const name = f.name;
  if (!isSqlIdentifier(name)) {
    throw new RegistryConfigError(`field name ${JSON.stringify(name)} is not a plain identifier`);
  }
  if (!present(f.column)) throw new RegistryConfigError(`field "${name}" has no column`);
  if (!isSqlIdentifier(f.column)) {
    throw new RegistryConfigError(
      `field "${name}": column ${JSON.stringify(f.column)} is not a plain identifier`,
    );
  }
  const type = f.type;
  if (typeof type !== 'string' || !FIELD_TYPES.has(type)) {
    throw new RegistryConfigError(`field "${name}": unknown type ${JSON.stringify(type)}`);
  }
  const field: FieldDef = {
    name,
    column: f.column,
    type: type as FieldType,
    required: optionalBoolean(f, 'required', name),
    unique: optionalBoolean(f, 'unique', name),
    // The identifier is set by the service whatever the payload says.
    readOnly: optionalBoolean(f, 'readOnly', name) || f.column === primaryKeyColumn,
    hidden: optionalBoolean(f, 'hidden', name),
  };

  const maxLength = optionalNumber(f, 'maxLength', name);
  if (maxLength !== undefined) {
    if (!Number.isInteger(maxLength) || maxLength < 1) {
      throw new RegistryConfigError(`field "${name}": maxLength is not a positive integer`);
    }
    field.maxLength = maxLength;
  }
  const min = optionalNumber(f, 'min', name);
  const max = optionalNumber(f, 'max', name);
  if (min !== undefined && max !== undefined && min > max) {
    throw new RegistryConfigError(`field "${name}": min is greater than max`);
  }
  if (min !== undefined) field.min = min;
  if (max !== undefined) field.max = max;

  const precision = optionalNumber(f, 'precision', name);
  const scale = optionalNumber(f, 'scale', name);
  if (precision !== undefined) {
    if (!Number.isInteger(precision) || precision < 1 || precision > 38) {
      throw new RegistryConfigError(`field "${name}": precision is not an integer from 1 to 38`);
    }
    field.precision = precision;
  }
  if (scale !== undefined) {
    if (!Number.isInteger(scale) || scale < 0 || scale > (precision ?? 38)) {
      throw new RegistryConfigError(`field "${name}": scale is not an integer from 0 to the precision`);
    }
    field.scale = scale;
  }

  if (present(f.pattern)) {
    if (typeof f.pattern !== 'string' || f.pattern.length > MAX_PATTERN_LENGTH) {
      throw new RegistryConfigError(
        `field "${name}": pattern is not a string of at most ${MAX_PATTERN_LENGTH} characters`,
      );
    }
    try {
      new RegExp(f.pattern);
    } catch {
      throw new RegistryConfigError(`field "${name}": pattern is not a valid regular expression`);
    }
    field.pattern = f.pattern;
  }

  if (present(f.valueSet)) {
    if (typeof f.valueSet !== 'string' || f.valueSet === '' || f.valueSet.length > 100) {
      throw new RegistryConfigError(`field "${name}": valueSet is not a value set code`);
    }
    field.valueSet = f.valueSet;
  } else if (type === 'select') {
    throw new RegistryConfigError(`field "${name}": a select field needs a valueSet`);
  }

  if (present(f.references)) {
    const ref = f.references;
    if (!isObject(ref) || !isEntityCode(ref.entity) || !isSqlIdentifier(ref.field)) {
      throw new RegistryConfigError(`field "${name}": references is not {entity, field}`);
    }
    field.references = { entity: ref.entity, field: ref.field };
  }
  return field;
}

/** Validates one relation (D25); onDelete defaults to the safe `restrict`. */
export function parseRelation(r: RawObject): RelationDef {
  if (!isEntityCode(r.entity)) {
    throw new RegistryConfigError(`relation entity ${JSON.stringify(r.entity)} is not an entity code`);
  }
  if (!isSqlIdentifier(r.foreignKey)) {
    throw new RegistryConfigError(`relation foreignKey ${JSON.stringify(r.foreignKey)} is not a field name`);
  }
  const onDelete = present(r.onDelete) ? r.onDelete : 'restrict';
  if (onDelete !== 'restrict' && onDelete !== 'cascade') {
    throw new RegistryConfigError(
      `relation ${r.entity}.${r.foreignKey}: onDelete is not restrict or cascade`,
    );
  }
  return { entity: r.entity, foreignKey: r.foreignKey, onDelete };
}

/** Fields and relations of a merged payload; two fields may not share a column. */
export function parsePayload(
  raw: RawPayload,
  primaryKeyColumn?: string,
): { fields: FieldDef[]; relations: RelationDef[] } {
  const fields = raw.fields.map((f) => parseField(f, primaryKeyColumn));
  const columns = new Map<string, string>();
  for (const f of fields) {
    const other = columns.get(f.column.toLowerCase());
    if (other !== undefined) {
      throw new RegistryConfigError(`fields "${other}" and "${f.name}" share column ${f.column}`);
    }
    columns.set(f.column.toLowerCase(), f.name);
  }
  return { fields, relations: raw.relations.map(parseRelation) };
}
