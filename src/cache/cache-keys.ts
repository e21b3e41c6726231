/**
 * Key builder and TTL table (spec §4.3, §4.5, §8; D2, D27). Every key starts with CACHE_KEY_PREFIX.
 * Tenant-scoped keys always carry the tenant id, so one tenant's entries can never answer another's.
 */
export type ConfigEntityType =
  'registry' | 'profile' | 'page' | 'workflow' | 'dataview' | 'navigation' | 'valueset';

const HOUR = 3600;

/** Seconds; 0 = no expiry. */
export const CACHE_TTL = {
  registry: 24 * HOUR,
  profile: 24 * HOUR,
  page: 5 * HOUR,
  workflow: 24 * HOUR,
  dataview: 5 * HOUR,
  navigation: 8 * HOUR,
  valueset: 12 * HOUR,
  /** Profile loader per-request cache (spec §4.3 rule 10). */
  profileRequest: HOUR,
  /** Startup profile catalog: no expiry until restart or reload (spec §4.5). */
  profileCatalog: 0,
  dataviewConfig: HOUR,
  /** A dataview code → the id of the row that serves it for a tenant (a small lookup). */
  dataviewCode: 5 * 60,
  entityConfig: 5 * 60,
  entityList: 300,
  tenant: 60,
  userState: 30,
  /** A token found not revoked in the database (D46); logout overwrites it with true. */
  tokenNotRevoked: 60,
  signupOtp: 600,
  /** A browser's change-stream ticket (D55): single use, this long. */
  changeTicket: 60,
} as const satisfies Record<string, number>;

const KEY_SPECIAL = /[:*?[\]\\\s]/;
const KEY_SPECIAL_ALL = /[:*?[\]\\\s]/g;

function part(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return 'system';
  if (typeof value === 'number') return String(value);
  // Key parts come from configuration and validated ids; `:` and glob characters would let one
  // key pattern match another's keys, so they are escaped (a test first: most parts have none).
  return KEY_SPECIAL.test(value)
    ? value.replace(KEY_SPECIAL_ALL, (c) => `%${c.charCodeAt(0).toString(16)}`)
    : value;
}

export class CacheKeys {
  constructor(readonly prefix: string) {}

  private key(...parts: Array<string | number | null | undefined>): string {
    return [this.prefix, ...parts.map(part)].join(':');
  }

  /** `{prefix}:prf:{tenantId}:{entityCode}` (spec §4.3 rule 3). */
  profileRequest(tenantId: string | number, entityCode: string): string {
    return this.key('prf', tenantId, entityCode);
  }

  /** Pattern over every tenant's profile-loader entry of one entity (invalidateEntityCache). */
  profileRequestAllTenants(entityCode: string): string {
    return `${this.prefix}:prf:*:${part(entityCode)}`;
  }

  /** `{prefix}:profile:{PRF_CODE}` (spec §4.5). */
  profileCatalog(prfCode: string): string {
    return this.key('profile', prfCode);
  }

  profileCatalogAll(): string {
    return `${this.prefix}:profile:*`;
  }

  /** `{prefix}:{entityType}:{tenantId}:{code}` (spec §8). */
  config(type: ConfigEntityType, tenantId: string | number | null, code: string): string {
    return this.key(type, tenantId, code);
  }

  /** `{prefix}:dataview:{tenantId}:{id}` (spec §8). */
  dataviewConfig(tenantId: string | number, id: string | number): string {
    return this.key('dataview', tenantId, id);
  }

  /** `{prefix}:dataview-code:{tenantId}:{code}`: which row (id) serves a dataview code for a tenant. */
  dataviewCode(tenantId: string | number, code: string): string {
    return this.key('dataview-code', tenantId, code);
  }

  /** `{prefix}:config:{entityCode}:{tenantId}` (spec §8). */
  entityConfig(entityCode: string, tenantId: string | number): string {
    return this.key('config', entityCode, tenantId);
  }

  /** `{prefix}:list:{tenantId}:{entityCode}:{hash}` (D27). */
  entityList(tenantId: string | number, entityCode: string, queryHash: string): string {
    return this.key('list', tenantId, entityCode, queryHash);
  }

  entityListAll(tenantId: string | number, entityCode: string): string {
    return `${this.prefix}:list:${part(tenantId)}:${part(entityCode)}:*`;
  }

  /** A tenant row as the TenantGuard sees it. */
  tenant(tenantId: string | number): string {
    return this.key('tenant', tenantId);
  }

  /** A user's sign-in state (active, role) as the JwtAuthGuard sees it. */
  userState(tenantId: string | number, userId: string | number): string {
    return this.key('user', tenantId, userId);
  }

  /** Pattern over every user-state entry of one tenant (a role's permissions changed). */
  userStateAll(tenantId: string | number): string {
    return `${this.prefix}:user:${part(tenantId)}:*`;
  }

  /** A revoked token id, kept until the token's exp (D14). */
  revokedToken(jti: string): string {
    return this.key('revoked', jti);
  }

  /** Sign-up one-time code and session of an e-mail in a tenant (D15). */
  signupOtp(tenantId: string | number, emailHash: string): string {
    return this.key('otp', tenantId, emailHash);
  }

  /** `{prefix}:tkt:{sha256 of the ticket}`: a change-stream ticket (D55); the ticket itself is never a key. */
  changeTicket(ticketHash: string): string {
    return this.key('tkt', ticketHash);
  }

  signupSession(sessionHash: string): string {
    return this.key('signup-session', sessionHash);
  }

  /** Everything of this service, for a full clear. */
  all(): string {
    return `${this.prefix}:*`;
  }

  /** `{prefix}:events:workflow`: wake-ups of the workflow workers (D49). */
  workflowEvents(): string {
    return this.key('events', 'workflow');
  }

  /** The pub/sub channel of the collection event, `{prefix}:events:collection` (D37). */
  collectionEvents(): string {
    return this.key('events', 'collection');
  }

  /** Pattern over every tenant's profile-loader entry of every entity (a profile or registry write). */
  profileRequestAll(): string {
    return `${this.prefix}:prf:*`;
  }

  /** Pattern over every key of one namespace (the part after the prefix), e.g. `list` (cache clear). */
  namespaceAll(namespace: string): string {
    return `${this.prefix}:${part(namespace)}:*`;
  }
}
