import type { FieldDef } from '../../registry/registry.types';
import { rowFilterFields } from '../row-filter';
import {
  fieldList,
  isObject,
  Json,
  normaliseAudit,
  normaliseMasking,
  normaliseMode,
  normalisePermissions,
  normaliseProjection,
  normaliseQuery,
  normaliseRowFilter,
  normaliseTenantMode,
  parseJsonish,
} from './policy-sections';
import { EntityPolicy, PolicyError, PolicyInput } from './policy.types';

export * from './policy.types';

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
