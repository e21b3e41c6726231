import { fromDbTimestamp } from '../database/dialect/timestamps';

/**
 * The optimistic-concurrency token of a record (D24, D42): its `<p>_last_modified` as ISO 8601 with
 * milliseconds, `lastModified` in bodies and `ETag: "<lastModified>"` in headers. A row whose
 * last_modified is NULL (written outside the service) has the token `null`, and no ETag.
 */

/** The body key that carries the token on reads and on PUT. */
export const LAST_MODIFIED_KEY = 'lastModified';

/** Stored texts (SQLite) already turned into tokens: the same rows are read again and again. */
const TEXT_TOKENS_MAX = 20_000;
const textTokens = new Map<string, string | null>();

/** The stored value as the API's token; null when NULL or unreadable. */
export function tokenOf(raw: unknown, driverType: string): string | null {
  if (typeof raw === 'string') {
    // Parsing the text was a twentieth of an uncached list page (issue 29); the answer for a
    // text never changes, so it is kept (bounded: dropped whole when full).
    const known = textTokens.get(raw);
    if (known !== undefined) return known;
    const token = tokenFrom(raw, driverType);
    if (textTokens.size >= TEXT_TOKENS_MAX) textTokens.clear();
    textTokens.set(raw, token);
    return token;
  }
  return tokenFrom(raw, driverType);
}

function tokenFrom(raw: unknown, driverType: string): string | null {
  const ms = fromDbTimestamp(raw, driverType);
  return ms === null ? null : new Date(ms).toISOString();
}

/** `"<lastModified>"`, or undefined for a record without a token. */
export function etagOf(token: string | null | undefined): string | undefined {
  return typeof token === 'string' ? `"${token}"` : undefined;
}

/** The entity tags of an If-Match / If-None-Match header (`W/` ignored); `*` stays `*`. */
export function entityTags(header: string | string[] | undefined): string[] {
  const text = Array.isArray(header) ? header.join(',') : header;
  if (typeof text !== 'string') return [];
  return text
    .split(',')
    .map((t) =>
      t
        .trim()
        .replace(/^W\//, '')
        .replace(/^"(.*)"$/, '$1'),
    )
    .filter((t) => t !== '');
}

/** If-None-Match names the record's current tag (or `*`): the client's copy is current (304). */
export function notModified(ifNoneMatch: string | string[] | undefined, token: string | null): boolean {
  if (token === null) return false;
  const tags = entityTags(ifNoneMatch);
  return tags.includes('*') || tags.includes(token);
}

/** The token a save names (D24): its instant, or null for a row whose last_modified is NULL. */
export interface ExpectedToken {
  ms: number | null;
  /** Why no token could be read (missing, malformed, body and If-Match disagreeing). */
  error?: { field: string; error: string };
}

/**
 * D24: the token of a save — `lastModified` of the body, else the If-Match header's one entity tag
 * (quotes and W/ allowed); both must agree when both are given. `lastModified: null` names a row
 * whose last_modified is NULL.
 */
export function expectedToken(bodyValue: unknown, ifMatch: string | string[] | undefined): ExpectedToken {
  const tags = entityTags(ifMatch);
  if (tags.length > 1)
    return { ms: NaN, error: { field: 'If-Match', error: 'must name exactly one entity tag' } };
  const fromHeader = tags.length === 1 ? tags[0] : undefined;
  const parse = (v: unknown): number | null =>
    v === null
      ? null
      : typeof v === 'string' && /^\d{4}-\d{2}-\d{2}T/.test(v)
        ? Date.parse(v)
        : typeof v === 'number'
          ? v
          : NaN;
  if (bodyValue === undefined && fromHeader === undefined)
    return {
      ms: NaN,
      error: { field: LAST_MODIFIED_KEY, error: 'is required (body lastModified or If-Match header)' },
    };
  const ms = parse(bodyValue !== undefined ? bodyValue : fromHeader);
  if (ms !== null && !Number.isFinite(ms))
    return { ms, error: { field: LAST_MODIFIED_KEY, error: 'must be an ISO 8601 timestamp' } };
  if (bodyValue !== undefined && fromHeader !== undefined && parse(fromHeader) !== ms)
    return { ms, error: { field: 'If-Match', error: 'differs from lastModified in the body' } };
  return { ms };
}
