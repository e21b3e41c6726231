import { applyProjection, filterableFields, visibleFields } from '../profile/policy/masking';
import type { EntityPolicy } from '../profile/policy/policy.model';
import type { EntityInfo, FieldDef } from '../registry/registry.types';
import { LAST_MODIFIED_KEY } from './concurrency-token';
import type { QueryPermissions } from './query/record-query';
import type { ReadRow, Row } from './records-read.repository';
import { fromDb } from './values';

/** The fields a read selects: visible under the profile (hidden and projected-out ones never are). */
export function readFields(entity: EntityInfo, policy: EntityPolicy): FieldDef[] {
  return visibleFields(policy, entity.fields).map((name) => entity.fields.find((f) => f.name === name)!);
}

/** What a caller may filter and sort on by default: visible, unmasked fields. */
export function queryPermissions(entity: EntityInfo, policy: EntityPolicy): QueryPermissions {
  const names = new Set(filterableFields(policy, entity.fields));
  return { filterable: names, sortable: names };
}

/** Driver values of `fields` in their JSON form (D1: JSON as text, booleans, dates…). */
export function typedFields(fields: readonly FieldDef[], raw: Row): Row {
  const out: Row = {};
  for (const f of fields) out[f.name] = fromDb(f, raw[f.name]);
  return out;
}

/**
 * A record as a client sees it (read rule 6, D42): its fields typed, projected and masked by the
 * profile, and its concurrency token, so that a read is all a client needs for its save.
 */
export function presentRecord(
  entity: EntityInfo,
  policy: EntityPolicy,
  fields: readonly FieldDef[],
  row: ReadRow,
): Row {
  const out = applyProjection(typedFields(fields, row.fields), policy, entity.fields);
  out[LAST_MODIFIED_KEY] = row.lastModified;
  return out;
}
