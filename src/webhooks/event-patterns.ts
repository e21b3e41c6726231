import type { FieldError } from '../common/errors/app-error';

/** D54: a webhook's `events` are patterns: `*`, `<entity>.*`, `*.<action>` or `<entity>.<action>`. */
export const EVENT_PATTERN = /^(\*|[A-Za-z0-9_-]{1,100})\.(\*|created|updated|deleted|restored)$|^\*$/;
export const MAX_PATTERNS = 50;

/** Whether the event type `<entity>.<action>` matches one of the patterns. */
export function matchesAny(patterns: readonly string[], type: string): boolean {
  const dot = type.lastIndexOf('.');
  const entity = type.slice(0, dot);
  const action = type.slice(dot + 1);
  return patterns.some((p) => {
    if (p === '*') return true;
    const i = p.lastIndexOf('.');
    const pe = p.slice(0, i);
    const pa = p.slice(i + 1);
    return (pe === '*' || pe === entity) && (pa === '*' || pa === action);
  });
}

/** The patterns of a body's `events`, or the problems with them; the entity codes named, for a check. */
export function parsePatterns(
  value: unknown,
  problems: FieldError[],
): { patterns: string[]; entities: string[] } {
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_PATTERNS) {
    problems.push({ field: 'events', error: `must be an array of 1 to ${MAX_PATTERNS} patterns` });
    return { patterns: [], entities: [] };
  }
  const patterns: string[] = [];
  for (const p of value) {
    if (typeof p !== 'string' || !EVENT_PATTERN.test(p)) {
      problems.push({
        field: 'events',
        error: `${JSON.stringify(p)} is not a pattern: use *, <entity>.*, *.<created|updated|deleted|restored> or <entity>.<action>`,
      });
      continue;
    }
    patterns.push(p);
  }
  const entities = [...new Set(patterns.map((p) => p.slice(0, Math.max(0, p.lastIndexOf('.')))))].filter(
    (e) => e !== '' && e !== '*',
  );
  return { patterns: [...new Set(patterns)], entities };
}
