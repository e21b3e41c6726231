import { FieldError, ValidationError } from '../common/errors/app-error';
import type { LoadedProfile } from '../profile/profile-loader.service';
import type { RecordQuery } from '../records/query/record-query';

const LIST_PARAMETERS = new Set(['limit', 'skip', 'sortBy', 'sortOrder', 'entity', 'ten_id']);

/**
 * Spec §4.3 style 2 list parameters → a RecordQuery: `filters[field]=value` (equality, D27),
 * `limit` (default the profile's defaultPageSize, at most its maxPageSize), `skip`, `sortBy`,
 * `sortOrder` (asc/desc in any case). Unknown parameters are refused and listed.
 */
/** A query with offset pages, as the list routes take it. */
export type OffsetQuery = RecordQuery & { page: { kind: 'offset'; limit: number; skip: number } };

export function parseListQuery(rawQuery: unknown, profile: LoadedProfile | undefined): OffsetQuery {
  const q = (rawQuery ?? {}) as Record<string, unknown>;
  const errors: FieldError[] = [];
  const filters: RecordQuery['filters'] = [];
  for (const [key, value] of Object.entries(q)) {
    const m = /^filters\[([A-Za-z0-9_]{1,100})\]$/.exec(key);
    if (m)
      filters.push({
        field: m[1],
        operator: 'equals',
        value: Array.isArray(value) ? (value as unknown[])[value.length - 1] : value,
        label: key,
      });
    else if (!LIST_PARAMETERS.has(key)) errors.push({ field: key, error: 'unknown query parameter' });
  }
  const maxPageSize = profile?.policy.query.maxPageSize ?? 500;
  const int = (name: string, fallback: number, min: number, max: number): number => {
    const raw = q[name];
    if (raw === undefined || raw === '') return fallback;
    if (typeof raw !== 'string' || !/^\d{1,9}$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      errors.push({ field: name, error: `must be an integer from ${min} to ${max}` });
      return fallback;
    }
    return Number(raw);
  };
  const limit = int(
    'limit',
    Math.min(profile?.policy.query.defaultPageSize ?? 100, maxPageSize),
    1,
    maxPageSize,
  );
  const skip = int('skip', 0, 0, 1_000_000_000);
  const sortOrder =
    q.sortOrder === undefined ? 'asc' : typeof q.sortOrder === 'string' ? q.sortOrder.toLowerCase() : '';
  if (sortOrder !== 'asc' && sortOrder !== 'desc')
    errors.push({ field: 'sortOrder', error: 'must be asc or desc' });
  const sortBy = typeof q.sortBy === 'string' && q.sortBy !== '' ? q.sortBy : undefined;
  if (filters.length > 0 && profile && !profile.policy.query.allowAdhocFilters) {
    errors.push({ field: 'filters', error: 'ad-hoc filters are not allowed for this entity' });
  }
  if (errors.length > 0) throw new ValidationError('Invalid query', errors);
  return {
    filters,
    sort: sortBy ? [{ field: sortBy, direction: sortOrder as 'asc' | 'desc' }] : [],
    page: { kind: 'offset', limit, skip },
    keyDirection: sortOrder as 'asc' | 'desc',
  };
}
