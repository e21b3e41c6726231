/** The tenant resolved by TenantGuard from x-tenant-id. */
export interface TenantContext {
  id: string;
  code: string;
  name: string;
  features: Record<string, boolean>;
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
