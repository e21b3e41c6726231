/** The tenant resolved by TenantGuard from x-tenant-id. */
export interface TenantContext {
  id: string;
  code: string;
  name: string;
  features: Record<string, boolean>;
}

/**
 * Who acts, for which tenant, in which request (D47): the first argument of every service that
 * acts on tenant data — dataviews, exports, workflows, and the records core through its
 * RecordContext. Built by a controller (`@CurrentActor()`) from the guards' results, or by a worker
 * from the ids stored in its job. The tenant id is required by type.
 */
export interface Actor {
  readonly tenantId: string;
  readonly user: AuthUser;
  readonly requestId: string;
}

/** The user resolved by JwtAuthGuard from the token (D13). */
export interface AuthUser {
  userId: number;
  email: string;
  tenantId: string;
  roleId: number | null;
  roles: string[];
  permissions: string[];
  jti: string;
  exp: number;
}
