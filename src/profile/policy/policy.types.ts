import type { RowFilter } from '../row-filter';

/**
 * The one normalised policy model of D23. Both `prf_policy` variants of spec 2.6.1 (and the separate
 * columns prf_policy_tenantpolicy / prf_policy_projection) are read into it once, when the profile
 * loads; everything downstream (access guard, query building, projection, masking) reads only this.
 */

export type ProfileMode = 'FULL' | 'READ' | 'WRITE' | 'EXECUTE';
export type { TenantMode } from '../../database/scope/tenant-rows';
import type { TenantMode } from '../../database/scope/tenant-rows';
export type MaskKind = 'hash' | 'mask' | 'redact' | 'partial';
export type PolicyAction = 'read' | 'write' | 'delete' | 'export' | 'approve';

export interface Projection {
  type: 'include' | 'exclude';
  fields: string[];
}

export interface QueryPolicy {
  allowAdhocFilters: boolean;
  maxPageSize: number;
  defaultPageSize: number;
}

export type PolicyPermissions = Record<PolicyAction, boolean>;

export interface AuditPolicy {
  enabled: boolean;
  logCreations: boolean;
  logUpdates: boolean;
  logDeletions: boolean;
}

export interface EntityPolicy {
  mode: ProfileMode;
  tenantMode: TenantMode;
  /** null: every (non-hidden) field is visible. */
  projection: Projection | null;
  masking: Record<string, MaskKind>;
  /** null: every field that is neither hidden nor read-only may be written. */
  writableFields: string[] | null;
  rowFilter: RowFilter | null;
  query: QueryPolicy;
  /** Effective permissions: the limits of `mode` (D22) are already applied. */
  permissions: PolicyPermissions;
  audit: AuditPolicy;
}

export interface PolicyInput {
  /** prf_mode_code. */
  modeCode: string;
  /** prf_policy (object, JSON text, or null). */
  policy: unknown;
  /** prf_policy_tenantpolicy column. */
  tenantPolicy?: unknown;
  /** prf_policy_projection column. */
  projection?: unknown;
}

export class PolicyError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid profile policy: ${problems.join('; ')}`);
    this.name = 'PolicyError';
  }
}

export const PROFILE_MODES: readonly ProfileMode[] = ['FULL', 'READ', 'WRITE', 'EXECUTE'];
export const TENANT_MODES: readonly TenantMode[] = ['STRICT', 'OPTIONAL', 'PERMISSIVE'];
export const MASK_KINDS: readonly MaskKind[] = ['hash', 'mask', 'redact', 'partial'];
export const POLICY_ACTIONS: readonly PolicyAction[] = ['read', 'write', 'delete', 'export', 'approve'];

export const DEFAULT_MAX_PAGE_SIZE = 500;
export const DEFAULT_PAGE_SIZE = 100;
/** Upper bound of maxPageSize: the dataview row cap of spec 8. */
export const PAGE_SIZE_CEILING = 10000;
