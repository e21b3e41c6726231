/**
 * What `POST /api/v1/admin/cache/clear` (D38) removes: the key namespaces of each scope, where the
 * tenant sits in a namespace's keys, and the namespaces that are never removed because they hold
 * security state rather than cached copies of the database.
 *
 * A key is `{prefix}:{namespace}:{parts…}` (cache-keys.ts escapes `:` inside parts, so the
 * namespace and the tenant part are unambiguous).
 */
export const CLEAR_SCOPES = ['all', 'profiles', 'config', 'lists'] as const;
export type ClearScope = (typeof CLEAR_SCOPES)[number];

export function isClearScope(value: unknown): value is ClearScope {
  return CLEAR_SCOPES.includes(value as ClearScope);
}

interface Namespace {
  /** The scope that clears it besides `all`; `other` = only `all`. */
  scope: Exclude<ClearScope, 'all'> | 'other';
  /**
   * Index of the tenant among the parts after the namespace; `catalog` = not in the key (the
   * start-up catalog, `{prefix}:profile:{PRF_CODE}`): the tenant is read from the entry itself.
   */
  tenantAt: number | 'catalog';
}

/** The cache namespaces of the service (cache-keys.ts) and the scope each belongs to. */
export const CACHE_NAMESPACES: Readonly<Record<string, Namespace>> = {
  // profiles: the start-up catalog and the profile loader's per-request entries.
  profile: { scope: 'profiles', tenantAt: 'catalog' },
  prf: { scope: 'profiles', tenantAt: 0 },
  // config: configuration rows (spec §8 `{entityType}:{tenantId}:{code}`) and the entity config.
  registry: { scope: 'config', tenantAt: 0 },
  page: { scope: 'config', tenantAt: 0 },
  workflow: { scope: 'config', tenantAt: 0 },
  dataview: { scope: 'config', tenantAt: 0 },
  'dataview-code': { scope: 'config', tenantAt: 0 },
  navigation: { scope: 'config', tenantAt: 0 },
  valueset: { scope: 'config', tenantAt: 0 },
  config: { scope: 'config', tenantAt: 1 },
  // lists: entity list pages (D27).
  list: { scope: 'lists', tenantAt: 0 },
  // Only `all`: tenant rows and user states (both re-read from the database on a miss).
  tenant: { scope: 'other', tenantAt: 0 },
  user: { scope: 'other', tenantAt: 0 },
};

/**
 * Never removed, by any scope: token revocations (D14, D46), sign-up codes, sessions, attempt and
 * resend counters (D15), and the counters of rate-limiter-flexible (`rate`, `rate-public`,
 * `rate-fail-addr`: D39 and the address limits; `signin-fail-addr`, `signin-fail-acct`: D12, D46).
 * Removing them would un-revoke tokens until the database is asked, or reset a brute-force budget.
 * Every namespace that begins with `rate` or `signin` is treated as one of them, so a new limiter
 * named that way is safe without an edit here; any other new security namespace must be added.
 */
export const SECURITY_NAMESPACES: readonly string[] = [
  'revoked',
  'otp',
  'signup-session',
  'rate',
  'rate-public',
  'rate-fail-addr',
  'signin-fail-addr',
  'signin-fail-acct',
];

export function isSecurityNamespace(namespace: string): boolean {
  return (
    SECURITY_NAMESPACES.includes(namespace) || namespace.startsWith('rate') || namespace.startsWith('signin')
  );
}

/** How one key of the store is treated by a clear. */
export interface KeyClass {
  namespace: string;
  /** Undefined for a namespace this module does not know (cleared by an all-tenant `all` only). */
  known?: Namespace;
  /** The tenant part of the key, when the namespace has one in the key. */
  tenant?: string;
}

/** undefined for keys outside the prefix, and for channels or keys without a namespace part. */
export function classifyKey(key: string, prefix: string): KeyClass | undefined {
  if (!key.startsWith(`${prefix}:`)) return undefined;
  const [namespace, ...parts] = key.slice(prefix.length + 1).split(':');
  if (!namespace || parts.length === 0) return undefined;
  const known = Object.prototype.hasOwnProperty.call(CACHE_NAMESPACES, namespace)
    ? CACHE_NAMESPACES[namespace]
    : undefined;
  const tenant = known && typeof known.tenantAt === 'number' ? parts[known.tenantAt] : undefined;
  return { namespace, known, tenant };
}

/** The namespaces whose keys a scope is about (`all`: every namespace, including unknown ones). */
export function namespacesOf(scope: Exclude<ClearScope, 'all'>): string[] {
  return Object.entries(CACHE_NAMESPACES)
    .filter(([, ns]) => ns.scope === scope)
    .map(([name]) => name);
}

/**
 * The decision for one key: `true` remove, `false` keep, `catalog` = a start-up catalog entry of
 * a tenant-scoped clear, whose owner is only known from its value.
 *
 * - Security namespaces are always kept.
 * - `tenantId` undefined (a system administrator's clear of every tenant): every key of the scope.
 * - `tenantId` set: only keys whose tenant part is that tenant; keys of namespaces this module does
 *   not know are kept, since their owner cannot be told.
 */
export function clearDecision(
  key: string,
  prefix: string,
  scope: ClearScope,
  tenantId: string | undefined,
): boolean | 'catalog' {
  const c = classifyKey(key, prefix);
  if (!c || isSecurityNamespace(c.namespace) || c.namespace === 'events') return false;
  if (scope !== 'all' && c.known?.scope !== scope) return false;
  if (tenantId === undefined) return true;
  if (!c.known) return false;
  if (c.known.tenantAt === 'catalog') return 'catalog';
  return c.tenant === tenantId;
}
