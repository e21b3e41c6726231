import { id, int, str, TableDef, ts } from './columns';

/**
 * Tables added after the initial migration. Each is created by a migration of its own, so it must
 * never be listed in TABLES (the landed initial migration creates every table of TABLES).
 */

/**
 * D46: token revocations, kept in the configuration database until the revoked tokens would have
 * expired anyway (the cache only stands in front). A row is either one token (`rvk_jti`, logout)
 * or every token of a user issued before `rvk_not_before` (jti NULL, e.g. a password change).
 * No foreign keys: rows are short-lived security records, like app_audit_logs, and must not stop
 * a tenant or user row from being removed.
 */
export const REVOKED_TOKENS_TABLE: TableDef = {
  name: 'app_revoked_tokens',
  prefix: 'rvk',
  columns: [
    id('rvk'),
    int('rvk_tenant_id', false),
    int('rvk_user_id', false),
    str('rvk_jti', 64),
    ts('rvk_not_before'),
    ts('rvk_expires_at', false),
    ts('rvk_created_at', false),
  ],
  indices: [
    // Unique when set: on SQL Server the migration makes it a filtered index (one NULL per key there).
    { columns: ['rvk_jti'], unique: true },
    { columns: ['rvk_tenant_id', 'rvk_user_id'] },
    { columns: ['rvk_expires_at'] },
  ],
};

/**
 * The tables of migration RevokedTokens1795305600000, which creates exactly these: a later table
 * goes into a list of its own, created by a migration of its own.
 */
export const REVOCATION_TABLES: readonly TableDef[] = [REVOKED_TOKENS_TABLE];
