import { parseRowFilter, RowFilter, RowFilterError } from '../row-filter';
import {
  AuditPolicy,
  DEFAULT_MAX_PAGE_SIZE,
  DEFAULT_PAGE_SIZE,
  MASK_KINDS,
  MaskKind,
  PAGE_SIZE_CEILING,
  POLICY_ACTIONS,
  PolicyPermissions,
  PROFILE_MODES,
  ProfileMode,
  Projection,
  QueryPolicy,
  TENANT_MODES,
  TenantMode,
} from './policy.types';
import { modeAllows } from '../access/mode-actions';

/** Readers of the sections of a `prf_policy` (D23); each appends its problems, never throws. */

export type Json = Record<string, unknown>;

export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * JSON columns arrive parsed on most drivers and as text on SQLite; both are accepted. With
 * `bareWord`, text that is not JSON is taken as is (prf_policy_tenantpolicy may hold just `STRICT`).
 */
export function parseJsonish(value: unknown, label: string, problems: string[], bareWord = false): unknown {
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

export function checkKeys(obj: Json, label: string, allowed: readonly string[], problems: string[]): void {
  for (const key of Object.keys(obj)) {
    if (!allowed.includes(key))
      problems.push(`${label} has unknown key '${key}' (allowed: ${allowed.join(', ')})`);
  }
}

export function fieldList(value: unknown, label: string, problems: string[]): string[] | undefined {
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

export function optionalBoolean(
  obj: Json,
  key: string,
  label: string,
  problems: string[],
): boolean | undefined {
  const value = obj[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') {
    problems.push(`${label}.${key} must be a boolean`);
    return undefined;
  }
  return value;
}

export function normaliseMode(modeCode: unknown, problems: string[]): ProfileMode {
  const mode = typeof modeCode === 'string' ? modeCode.trim().toUpperCase() : '';
  if ((PROFILE_MODES as readonly string[]).includes(mode)) return mode as ProfileMode;
  problems.push(`prf_mode_code ${JSON.stringify(modeCode)} is not one of ${PROFILE_MODES.join(', ')}`);
  return 'READ';
}

export function normaliseTenantMode(value: unknown, label: string, problems: string[]): TenantMode {
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
export function normaliseProjection(value: unknown, label: string, problems: string[]): Projection | null {
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

export function normaliseMasking(value: unknown, problems: string[]): Record<string, MaskKind> {
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

export function normaliseRowFilter(value: unknown, problems: string[]): RowFilter | null {
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

export function pageSize(obj: Json, key: string, problems: string[]): number | undefined {
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

export function normaliseQuery(value: unknown, problems: string[]): QueryPolicy {
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

export function normalisePermissions(
  value: unknown,
  mode: ProfileMode,
  problems: string[],
): PolicyPermissions {
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
export function normaliseAudit(value: unknown, problems: string[]): AuditPolicy {
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
