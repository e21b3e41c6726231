import type { FieldDef } from '../../registry/registry.types';
import { parseRowFilter, RowFilter, RowFilterError, rowFilterFields } from './row-filter';

/**
 * The one normalised policy model of D23. Both `prf_policy` variants of spec 2.6.1 (and the separate
 * columns prf_policy_tenantpolicy / prf_policy_projection) are read into it once, when the profile
 * loads; everything downstream (access guard, query building, projection, masking) reads only this.
 */

export type ProfileMode = 'FULL' | 'READ' | 'WRITE' | 'EXECUTE';
export type TenantMode = 'STRICT' | 'OPTIONAL' | 'PERMISSIVE';
export type MaskKind = 'hash' | 'mask' | 'redact' | 'partial';
export type PolicyAction = 'read' | 'write' | 'delete' | 'export' | 'approve';

export interface Projection {
  type: 'include' | 'exclude';
  fields: string[];
}

export interface QueryPolicy {
  allowAdhocFilters: boolean;
  maxPageSize: number;
  defaultPageSize: number;
}

export type PolicyPermissions = Record<PolicyAction, boolean>;

export interface AuditPolicy {
  enabled: boolean;
  logCreations: boolean;
  logUpdates: boolean;
  logDeletions: boolean;
}

export interface EntityPolicy {
  mode: ProfileMode;
  tenantMode: TenantMode;
  /** null: every (non-hidden) field is visible. */
  projection: Projection | null;
  masking: Record<string, MaskKind>;
  /** null: every field that is neither hidden nor read-only may be written. */
  writableFields: string[] | null;
  rowFilter: RowFilter | null;
  query: QueryPolicy;
  /** Effective permissions: the limits of `mode` (D22) are already applied. */
  permissions: PolicyPermissions;
  audit: AuditPolicy;
}

export interface PolicyInput {
  /** prf_mode_code. */
  modeCode: string;
  /** prf_policy (object, JSON text, or null). */
  policy: unknown;
  /** prf_policy_tenantpolicy column. */
  tenantPolicy?: unknown;
  /** prf_policy_projection column. */
  projection?: unknown;
}

export class PolicyError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid profile policy: ${problems.join('; ')}`);
    this.name = 'PolicyError';
  }
}

export const PROFILE_MODES: readonly ProfileMode[] = ['FULL', 'READ', 'WRITE', 'EXECUTE'];
export const TENANT_MODES: readonly TenantMode[] = ['STRICT', 'OPTIONAL', 'PERMISSIVE'];
export const MASK_KINDS: readonly MaskKind[] = ['hash', 'mask', 'redact', 'partial'];
export const POLICY_ACTIONS: readonly PolicyAction[] = ['read', 'write', 'delete', 'export', 'approve'];

export const DEFAULT_MAX_PAGE_SIZE = 500;
export const DEFAULT_PAGE_SIZE = 100;
/** Upper bound of maxPageSize: the dataview row cap of spec 8. */
export const PAGE_SIZE_CEILING = 10000;

/** D22: READ (and EXECUTE, whose FUNCTION objects are read-only) reads and exports; WRITE cannot delete. */
const MODE_ALLOWS: Record<ProfileMode, readonly PolicyAction[]> = {
  FULL: POLICY_ACTIONS,
  WRITE: ['read', 'write', 'export', 'approve'],
  READ: ['read', 'export'],
  EXECUTE: ['read', 'export'],
};

export function modeAllows(mode: ProfileMode, action: PolicyAction): boolean {
  return MODE_ALLOWS[mode].includes(action);
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * JSON columns arrive parsed on most drivers and as text on SQLite; both are accepted. With
 * `bareWord`, text that is not JSON is taken as is (prf_policy_tenantpolicy may hold just `STRICT`).
 */
function parseJsonish(value: unknown, label: string, problems: string[], bareWord = false): unknown {
  if (typeof value !== 'string') return value;
  if (value.trim() === '') return null;
  try {
    return JSON.parse(value) as unknown;
  } catch {
    if (bareWord) return value;
    problems.push(`${label} is not valid JSON`);
    return undefined;
  }
}

function checkKeys(obj: Json, label: string, allowed: readonly string[], problems: string[]): void {
  for (const key of Object.keys(obj)) {
    if (!allowed.includes(key))
      problems.push(`${label} has unknown key '${key}' (allowed: ${allowed.join(', ')})`);
  }
}

function fieldList(value: unknown, label: string, problems: string[]): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) {
    problems.push(`${label} must be an array of field names`);
    return undefined;
  }
  const out: string[] = [];
  value.forEach((item, i) => {
    if (typeof item !== 'string' || item.trim() === '') {
      problems.push(`${label}[${i}] must be a non-empty string`);
    } else if (!out.includes(item)) {
      out.push(item);
    }
  });
  return out;
}

function optionalBoolean(obj: Json, key: string, label: string, problems: string[]): boolean | undefined {
  const value = obj[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') {
    problems.push(`${label}.${key} must be a boolean`);
    return undefined;
  }
  return value;
}

function normaliseMode(modeCode: unknown, problems: string[]): ProfileMode {
  const mode = typeof modeCode === 'string' ? modeCode.trim().toUpperCase() : '';
  if ((PROFILE_MODES as readonly string[]).includes(mode)) return mode as ProfileMode;
  problems.push(`prf_mode_code ${JSON.stringify(modeCode)} is not one of ${PROFILE_MODES.join(', ')}`);
  return 'READ';
}

function normaliseTenantMode(value: unknown, label: string, problems: string[]): TenantMode {
  let raw: unknown = value;
  if (isObject(value)) {
    checkKeys(value, label, ['mode'], problems);
    raw = value.mode;
  }
  if (raw === undefined || raw === null) return 'STRICT';
  const mode = typeof raw === 'string' ? raw.trim().toUpperCase() : '';
  if ((TENANT_MODES as readonly string[]).includes(mode)) return mode as TenantMode;
  problems.push(`${label}.mode ${JSON.stringify(raw)} is not one of ${TENANT_MODES.join(', ')}`);
  return 'STRICT';
}

/**
 * Projection: `{type, fields, excludeFields}` (variant B), also `includeFields` / `include` /
 * `exclude` lists, or a bare array (= include). With type `exclude`, `fields` lists the excluded
 * fields. When both include and exclude lists are given, the result is include-minus-exclude (the
 * narrower reading). Unknown keys are refused: a misspelt `excludeFields` would expose data.
 */
function normaliseProjection(value: unknown, label: string, problems: string[]): Projection | null {
  if (value === undefined || value === null) return null;
  if (Array.isArray(value)) {
    const fields = fieldList(value, label, problems);
    return fields ? { type: 'include', fields } : null;
  }
  if (!isObject(value)) {
    problems.push(`${label} must be an object`);
    return null;
  }
  checkKeys(
    value,
    label,
    ['type', 'fields', 'excludeFields', 'includeFields', 'include', 'exclude'],
    problems,
  );
  let type: 'include' | 'exclude' | undefined;
  if (value.type !== undefined && value.type !== null) {
    const t = typeof value.type === 'string' ? value.type.trim().toLowerCase() : '';
    if (t === 'include' || t === 'exclude') type = t;
    else problems.push(`${label}.type ${JSON.stringify(value.type)} is not include or exclude`);
  }
  const fields = fieldList(value.fields, `${label}.fields`, problems);
  const includeLists = [
    type === 'exclude' ? undefined : fields,
    fieldList(value.includeFields, `${label}.includeFields`, problems),
    fieldList(value.include, `${label}.include`, problems),
  ].filter((l): l is string[] => l !== undefined);
  const excludeLists = [
    type === 'exclude' ? fields : undefined,
    fieldList(value.excludeFields, `${label}.excludeFields`, problems),
    fieldList(value.exclude, `${label}.exclude`, problems),
  ].filter((l): l is string[] => l !== undefined);
  const excluded = [...new Set(excludeLists.flat())];

  if (includeLists.length > 0) {
    if (type === 'exclude') {
      problems.push(`${label} has type exclude but also lists included fields`);
      return null;
    }
    const included = [...new Set(includeLists.flat())].filter((f) => !excluded.includes(f));
    return { type: 'include', fields: included };
  }
  if (type === 'include') {
    problems.push(`${label}.type is include but no fields are listed`);
    return null;
  }
  return excludeLists.length > 0 ? { type: 'exclude', fields: excluded } : null;
}

function normaliseMasking(value: unknown, problems: string[]): Record<string, MaskKind> {
  const out: Record<string, MaskKind> = {};
  if (value === undefined || value === null) return out;
  if (!isObject(value)) {
    problems.push('masking must be an object mapping field names to hash, mask, redact or partial');
    return out;
  }
  for (const [field, kind] of Object.entries(value)) {
    const k = typeof kind === 'string' ? kind.trim().toLowerCase() : '';
    if ((MASK_KINDS as readonly string[]).includes(k)) out[field] = k as MaskKind;
    else problems.push(`masking.${field} ${JSON.stringify(kind)} is not one of ${MASK_KINDS.join(', ')}`);
  }
  return out;
}

function normaliseRowFilter(value: unknown, problems: string[]): RowFilter | null {
  if (value === undefined || value === null) return null;
  if (!isObject(value)) {
    problems.push('rowFilters must be an object with a where string');
    return null;
  }
  checkKeys(value, 'rowFilters', ['where'], problems);
  const where = value.where;
  if (where === undefined || where === null) return null;
  if (typeof where !== 'string') {
    problems.push('rowFilters.where must be a string');
    return null;
  }
  if (where.trim() === '') return null;
  try {
    return parseRowFilter(where);
  } catch (err) {
    if (err instanceof RowFilterError) {
      problems.push(`rowFilters.where: ${err.message}`);
      return null;
    }
    throw err;
  }
}

function pageSize(obj: Json, key: string, problems: string[]): number | undefined {
  const value = obj[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) {
    problems.push(`queryPolicy.${key} must be a positive integer`);
    return undefined;
  }
  if (value > PAGE_SIZE_CEILING) {
    problems.push(`queryPolicy.${key} must not exceed ${PAGE_SIZE_CEILING}`);
    return undefined;
  }
  return value;
}

function normaliseQuery(value: unknown, problems: string[]): QueryPolicy {
  const obj = isObject(value) ? value : {};
  if (value !== undefined && value !== null && !isObject(value))
    problems.push('queryPolicy must be an object');
  checkKeys(obj, 'queryPolicy', ['allowAdhocFilters', 'maxPageSize', 'defaultPageSize'], problems);
  const maxPageSize = pageSize(obj, 'maxPageSize', problems) ?? DEFAULT_MAX_PAGE_SIZE;
  const explicitDefault = pageSize(obj, 'defaultPageSize', problems);
  if (explicitDefault !== undefined && explicitDefault > maxPageSize) {
    problems.push(`queryPolicy.defaultPageSize ${explicitDefault} exceeds maxPageSize ${maxPageSize}`);
  }
  return {
    allowAdhocFilters: optionalBoolean(obj, 'allowAdhocFilters', 'queryPolicy', problems) ?? true,
    maxPageSize,
    defaultPageSize: Math.min(explicitDefault ?? DEFAULT_PAGE_SIZE, maxPageSize),
  };
}

function normalisePermissions(value: unknown, mode: ProfileMode, problems: string[]): PolicyPermissions {
  const obj = isObject(value) ? value : {};
  if (value !== undefined && value !== null && !isObject(value))
    problems.push('permissions must be an object');
  checkKeys(obj, 'permissions', POLICY_ACTIONS, problems);
  const out = {} as PolicyPermissions;
  for (const action of POLICY_ACTIONS) {
    out[action] = (optionalBoolean(obj, action, 'permissions', problems) ?? true) && modeAllows(mode, action);
  }
  return out;
}

/**
 * Audit is off unless asked for. `enabled` defaults to "some log flag is true"; each log flag
 * defaults to true once auditing is enabled, and is false whenever it is not.
 */
function normaliseAudit(value: unknown, problems: string[]): AuditPolicy {
  const obj = isObject(value) ? value : {};
  if (value !== undefined && value !== null && !isObject(value)) problems.push('audit must be an object');
  checkKeys(obj, 'audit', ['enabled', 'logCreations', 'logUpdates', 'logDeletions'], problems);
  const flags = {
    logCreations: optionalBoolean(obj, 'logCreations', 'audit', problems),
    logUpdates: optionalBoolean(obj, 'logUpdates', 'audit', problems),
    logDeletions: optionalBoolean(obj, 'logDeletions', 'audit', problems),
  };
  const enabled =
    optionalBoolean(obj, 'enabled', 'audit', problems) ?? Object.values(flags).some((f) => f === true);
  return {
    enabled,
    logCreations: enabled && (flags.logCreations ?? true),
    logUpdates: enabled && (flags.logUpdates ?? true),
    logDeletions: enabled && (flags.logDeletions ?? true),
  };
}

/**
 * Reads a profile's policy into the model (D23); throws PolicyError listing every problem.
 *
 * Precedence: a key present in prf_policy (`tenantPolicy`, `projection`) wins over the separate
 * column (prf_policy_tenantpolicy, prf_policy_projection); the column is used only when prf_policy
 * lacks the key. prf_policy is the documented shape the loader reads (spec 2.6.1 variant A), the
 * columns are its older, flat copies, and taking one source whole (no deep merge) keeps a policy
 * readable. Unknown top-level keys of prf_policy are ignored (it may carry other settings); unknown
 * keys inside the known sections are refused, since a misspelt key would silently weaken the policy.
 *
 * Defaults: tenantMode STRICT (never PERMISSIVE unless written), no projection, no masking, every
 * non-read-only field writable, no row filter, adhoc filters allowed, maxPageSize 500,
 * defaultPageSize min(100, maxPageSize), permissions true where the mode allows, audit off.
 */
export function normalisePolicy(input: PolicyInput): EntityPolicy {
  const problems: string[] = [];
  const mode = normaliseMode(input.modeCode, problems);

  const rawPolicy = parseJsonish(input.policy, 'prf_policy', problems);
  let policy: Json = {};
  if (isObject(rawPolicy)) policy = rawPolicy;
  else if (rawPolicy !== undefined && rawPolicy !== null) problems.push('prf_policy must be a JSON object');

  const has = (key: string): boolean => policy[key] !== undefined && policy[key] !== null;

  const tenantMode = has('tenantPolicy')
    ? normaliseTenantMode(policy.tenantPolicy, 'prf_policy.tenantPolicy', problems)
    : normaliseTenantMode(
        parseJsonish(input.tenantPolicy, 'prf_policy_tenantpolicy', problems, true),
        'prf_policy_tenantpolicy',
        problems,
      );

  const projection = has('projection')
    ? normaliseProjection(policy.projection, 'prf_policy.projection', problems)
    : normaliseProjection(
        parseJsonish(input.projection, 'prf_policy_projection', problems),
        'prf_policy_projection',
        problems,
      );

  const writableFields = fieldList(policy.writableFields, 'writableFields', problems) ?? null;

  const result: EntityPolicy = {
    mode,
    tenantMode,
    projection,
    masking: normaliseMasking(policy.masking, problems),
    writableFields,
    rowFilter: normaliseRowFilter(policy.rowFilters, problems),
    query: normaliseQuery(policy.queryPolicy, problems),
    permissions: normalisePermissions(policy.permissions, mode, problems),
    audit: normaliseAudit(policy.audit, problems),
  };
  if (problems.length > 0) throw new PolicyError(problems);
  return result;
}

/**
 * Problems of a policy against the entity's registry fields: names that are not registry fields,
 * included hidden fields (never returned anyway), writable read-only or hidden fields. Empty = fine.
 */
export function validatePolicyAgainstFields(policy: EntityPolicy, fields: readonly FieldDef[]): string[] {
  const byName = new Map(fields.map((f) => [f.name, f]));
  const problems: string[] = [];
  const unknown = (names: Iterable<string>, label: string): void => {
    for (const name of names) if (!byName.has(name)) problems.push(`${label} names unknown field '${name}'`);
  };
  if (policy.projection) {
    unknown(policy.projection.fields, 'projection');
    if (policy.projection.type === 'include') {
      for (const name of policy.projection.fields) {
        if (byName.get(name)?.hidden) problems.push(`projection includes hidden field '${name}'`);
      }
    }
  }
  unknown(Object.keys(policy.masking), 'masking');
  if (policy.writableFields) {
    unknown(policy.writableFields, 'writableFields');
    for (const name of policy.writableFields) {
      const field = byName.get(name);
      if (field?.hidden) problems.push(`writableFields lists hidden field '${name}'`);
      else if (field?.readOnly) problems.push(`writableFields lists read-only field '${name}'`);
    }
  }
  if (policy.rowFilter) unknown(rowFilterFields(policy.rowFilter), 'rowFilters.where');
  return problems;
}
