import { createHash } from 'node:crypto';
import type { FieldDef } from '../../registry/registry.types';
import type { EntityPolicy, MaskKind } from './policy.model';

/** Longest run of `*` that `mask` produces, so the output does not give away long values' lengths. */
const MASK_MAX = 16;
const PARTIAL_KEEP = 4;
const EMAIL = /^([^@\s]+)@([^@\s]+\.[^@\s]+)$/;

function asText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean')
    return String(value);
  if (value instanceof Date) return value.toISOString();
  if (Buffer.isBuffer(value)) return value.toString('hex');
  return JSON.stringify(value) ?? '';
}

/**
 * One masked value (spec 2.6.1 `masking`); null and undefined stay null, other values are turned
 * into text first (so a masked number comes back as a string).
 *
 * - hash: `sha256:` + the first 16 hex digits of SHA-256 of the text. Stable, so equal values can
 *   still be recognised as equal; unsalted, so a short value (a PIN) can be guessed by brute force:
 *   use redact for those.
 * - mask: one `*` per character, at most 16.
 * - redact: null.
 * - partial: e-mail addresses keep their first character and the domain (`j***@example.com`);
 *   anything else keeps its last 4 characters, but never more than half of the value, so a short
 *   value is not shown whole (`12345678` → `****5678`, `123` → `**3`).
 */
export function maskValue(kind: MaskKind, value: unknown): string | null {
  if (value === null || value === undefined) return null;
  const text = asText(value);
  switch (kind) {
    case 'hash':
      return `sha256:${createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 16)}`;
    case 'mask':
      return '*'.repeat(Math.min([...text].length, MASK_MAX));
    case 'redact':
      return null;
    case 'partial': {
      const email = EMAIL.exec(text);
      if (email) return `${[...email[1]][0]}***@${email[2]}`;
      const chars = [...text];
      const keep = Math.min(PARTIAL_KEEP, Math.floor(chars.length / 2));
      return '*'.repeat(Math.min(chars.length - keep, MASK_MAX)) + chars.slice(chars.length - keep).join('');
    }
  }
}

/**
 * Names of the fields a client may read, in registry order: not hidden, and allowed by the
 * projection (include: listed; exclude: not listed). Masked fields are visible (masked).
 */
export function visibleFields(policy: EntityPolicy, fields: readonly FieldDef[]): string[] {
  const projection = policy.projection;
  return fields
    .filter((f) => !f.hidden)
    .filter((f) => {
      if (!projection) return true;
      const listed = projection.fields.includes(f.name);
      return projection.type === 'include' ? listed : !listed;
    })
    .map((f) => f.name);
}

/**
 * Names a client may filter and sort by: visible and not masked. A filter or sort on a hidden or
 * masked field would be an oracle on the value the policy keeps from the client.
 */
export function filterableFields(policy: EntityPolicy, fields: readonly FieldDef[]): string[] {
  return visibleFields(policy, fields).filter((name) => policy.masking[name] === undefined);
}

/**
 * Names a client may write: not hidden, not read-only, and listed in writableFields when the policy
 * has that list. The projection does not limit writes (a write-only field is legitimate).
 */
export function writableFieldNames(policy: EntityPolicy, fields: readonly FieldDef[]): string[] {
  return fields
    .filter((f) => !f.hidden && !f.readOnly)
    .filter((f) => policy.writableFields === null || policy.writableFields.includes(f.name))
    .map((f) => f.name);
}

/** What applyProjection does for one (policy, field list): the visible names with their masks. */
interface ProjectionPlan {
  visible: { name: string; mask: MaskKind | undefined }[];
  registry: Set<string>;
}

/**
 * Plans kept per policy and field list (both are immutable once loaded, and replaced — not
 * changed — when the configuration is), so a page of rows computes its visible fields once,
 * not once per row (issue 29: a fifth of an uncached list's own work).
 */
const plans = new WeakMap<EntityPolicy, WeakMap<readonly FieldDef[], ProjectionPlan>>();

function projectionPlan(policy: EntityPolicy, fields: readonly FieldDef[]): ProjectionPlan {
  let perPolicy = plans.get(policy);
  if (!perPolicy) {
    perPolicy = new WeakMap();
    plans.set(policy, perPolicy);
  }
  let plan = perPolicy.get(fields);
  if (!plan) {
    plan = {
      visible: visibleFields(policy, fields).map((name) => ({ name, mask: policy.masking[name] })),
      registry: new Set(fields.map((f) => f.name)),
    };
    perPolicy.set(fields, plan);
  }
  return plan;
}

/**
 * A record (keyed by field name) as the client may see it: only visible fields, masked where the
 * policy says so. Keys that are not visible registry fields are dropped, so a raw row can never leak
 * a column; keys the service adds itself (e.g. `lastModified`) pass through only when listed in
 * `options.passThrough` (registry field names there are ignored).
 */
export function applyProjection(
  record: Record<string, unknown>,
  policy: EntityPolicy,
  fields: readonly FieldDef[],
  options: { passThrough?: readonly string[] } = {},
): Record<string, unknown> {
  const plan = projectionPlan(policy, fields);
  const out: Record<string, unknown> = {};
  for (const { name, mask } of plan.visible) {
    if (!Object.prototype.hasOwnProperty.call(record, name)) continue;
    out[name] = mask ? maskValue(mask, record[name]) : record[name];
  }
  // A registry field never passes through: that would bypass hiding, projection and masking.
  for (const name of options.passThrough ?? []) {
    if (!plan.registry.has(name) && Object.prototype.hasOwnProperty.call(record, name)) out[name] = record[name];
  }
  return out;
}
