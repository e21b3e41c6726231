import { createHash } from 'node:crypto';
import { CACHE_TTL, ConfigEntityType } from '../cache/cache-keys';
import { ValidationError } from '../common/errors/app-error';

/**
 * The three kinds of configuration an SPA reads (D41, D50), their tables (spec §2.7, §2.10), cache
 * key types and TTLs (spec §8), and the pure rules that turn a row into an answer with a version.
 */
export type ConfigKind = 'page' | 'navigation' | 'valueSet';

export interface ConfigKindDef {
  kind: ConfigKind;
  /** For messages: `Page customer_form not found`. */
  label: string;
  table: string;
  /** Column prefix without the underscore (spec §2.1). */
  prefix: string;
  /** `{prefix}:{cacheType}:{tenantId}:{code}` (spec §8). */
  cacheType: ConfigEntityType;
  /** Seconds (spec §8). */
  ttl: number;
  /** The column read as `name`; null = the kind has none (`<p>_add_dtls.name`, then the code). */
  nameColumn: string | null;
  /** Pages only: pgc_type and pgc_object_code. */
  typeColumn: string | null;
  objectColumn: string | null;
  /** The JSON column served, the key it is served under, and the JSON type it must have. */
  bodyColumn: string;
  bodyKey: 'schema' | 'structure' | 'values';
  bodyShape: 'object' | 'array';
}

export const CONFIG_KINDS: Readonly<Record<ConfigKind, ConfigKindDef>> = {
  page: {
    kind: 'page',
    label: 'Page',
    table: 'app_page_configs',
    prefix: 'pgc',
    cacheType: 'page',
    ttl: CACHE_TTL.page,
    nameColumn: 'pgc_name',
    typeColumn: 'pgc_type',
    objectColumn: 'pgc_object_code',
    bodyColumn: 'pgc_schema',
    bodyKey: 'schema',
    bodyShape: 'object',
  },
  navigation: {
    kind: 'navigation',
    label: 'Navigation',
    table: 'app_navigation_configs',
    prefix: 'nav',
    cacheType: 'navigation',
    ttl: CACHE_TTL.navigation,
    nameColumn: null,
    typeColumn: null,
    objectColumn: null,
    bodyColumn: 'nav_structure',
    bodyKey: 'structure',
    bodyShape: 'object',
  },
  valueSet: {
    kind: 'valueSet',
    label: 'Value set',
    table: 'app_value_sets',
    prefix: 'vs',
    cacheType: 'valueset',
    ttl: CACHE_TTL.valueset,
    // Spec §2.10 gives value sets a description and no name column.
    nameColumn: 'vs_description',
    typeColumn: null,
    objectColumn: null,
    bodyColumn: 'vs_values',
    bodyKey: 'values',
    bodyShape: 'array',
  },
};

/** A candidate row as the repository reads it: JSON columns still text (D1). */
export interface ConfigRow {
  id: number;
  /** Owner; null for a system-wide row. */
  tenantId: number | null;
  code: string;
  name: string | null;
  type: string | null;
  objectCode: string | null;
  body: string | null;
  addDtls: string | null;
  /** `<p>_last_modified` as ISO 8601 (D4); null when NULL. */
  lastModified: string | null;
}

/** The data of a configuration route (D50). Pages add `type` and `objectCode`. */
export interface ConfigAnswer {
  code: string;
  name: string;
  type?: string | null;
  objectCode?: string | null;
  schema?: Record<string, unknown>;
  structure?: Record<string, unknown>;
  values?: unknown[];
  version: string;
}

/** Codes a client may ask for; anything else is 400 before any lookup. */
export const CONFIG_CODE = /^[A-Za-z0-9_.-]{1,100}$/;

export function assertConfigCode(code: string): void {
  if (!CONFIG_CODE.test(code))
    throw new ValidationError('Validation failed', [
      { field: 'code', error: 'must be 1 to 100 characters of A-Z, a-z, 0-9, _, . or -' },
    ]);
}

/** Characters of the version: 22 base64url characters, 132 bits of SHA-256. */
export const VERSION_LENGTH = 22;

/**
 * The version of an answer: a hash of the row's id, its last-modified instant and the content served,
 * so it changes whenever the row does, and is the same on every instance and after every reload
 * (never a random token: two instances computing it agree).
 */
export function configVersion(
  kind: ConfigKind,
  id: number,
  lastModified: string | null,
  content: Omit<ConfigAnswer, 'version'>,
): string {
  return createHash('sha256')
    .update(JSON.stringify([kind, id, lastModified, content]))
    .digest('base64url')
    .slice(0, VERSION_LENGTH);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function parseJson(text: string | null): unknown {
  if (text === null) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * The answer of a row, or undefined when its JSON column is not JSON of the kind's shape (an object
 * for pages and navigation, an array for value sets): such a row cannot be served.
 */
export function answerOf(def: ConfigKindDef, row: ConfigRow): ConfigAnswer | undefined {
  const body = parseJson(row.body);
  if (def.bodyShape === 'object' ? !isObject(body) : !Array.isArray(body)) return undefined;
  const extra = parseJson(row.addDtls);
  const extraName = isObject(extra) && typeof extra.name === 'string' ? extra.name : null;
  const content: Omit<ConfigAnswer, 'version'> = {
    code: row.code,
    name: row.name ?? extraName ?? row.code,
  };
  if (def.typeColumn !== null) content.type = row.type;
  if (def.objectColumn !== null) content.objectCode = row.objectCode;
  Object.assign(content, { [def.bodyKey]: body });
  return { ...content, version: configVersion(def.kind, row.id, row.lastModified, content) };
}

/** A cached answer that still has the shape this code serves (an older deployment's entry is reloaded). */
export function isAnswer(def: ConfigKindDef, code: string, value: unknown): value is ConfigAnswer {
  if (!isObject(value) || value.code !== code) return false;
  if (typeof value.name !== 'string' || typeof value.version !== 'string') return false;
  const body = value[def.bodyKey];
  return def.bodyShape === 'object' ? isObject(body) : Array.isArray(body);
}
