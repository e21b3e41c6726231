import { Injectable } from '@nestjs/common';
import { DatabaseService } from '../database/database.service';
import { toBool } from '../tenant/tenants.repository';

export interface UserRecord {
  id: number;
  tenantId: string;
  email: string;
  firstName: string | null;
  lastName: string | null;
  passwordHash: string | null;
  roleId: number | null;
  roleCode: string | null;
  permissions: string[];
  active: boolean;
}


function parsePermissions(value: unknown): string[] {
  if (typeof value !== 'string') return [];
  try {
    const parsed: unknown = JSON.parse(value);
    return Array.isArray(parsed) ? parsed.filter((p): p is string => typeof p === 'string') : [];
  } catch {
    return [];
  }
}

/** Normalised form of an e-mail address: sign-in and sign-up compare this form. */
export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}

/**
 * Queries of app_users for authentication. Every method takes the tenant id and every query is
 * restricted to it; the role join is restricted to the same tenant too, so a role id of another
 * tenant never grants anything.
 */
@Injectable()
export class UsersRepository {
  constructor(private readonly database: DatabaseService) {}

  async findByEmail(tenantId: string, email: string): Promise<UserRecord | undefined> {
    return this.findOne(tenantId, 'u.usr_email_id = :email', { email: normaliseEmail(email) });
  }

  async findById(tenantId: string, userId: number): Promise<UserRecord | undefined> {
    return this.findOne(tenantId, 'u.usr_id = :userId', { userId });
  }

  async updatePasswordHash(tenantId: string, userId: number, hash: string): Promise<void> {
    await this.database.dataSource
      .createQueryBuilder()
      .update('app_users')
      .set({ usr_password_hash: hash })
      .where('usr_id = :userId AND usr_tenant_id = :tenantId', { userId, tenantId: Number(tenantId) })
      .execute();
  }

  private async findOne(
    tenantId: string,
    where: string,
    params: Record<string, unknown>,
  ): Promise<UserRecord | undefined> {
    const row = await this.database.dataSource
      .createQueryBuilder()
      .select([
        'u.usr_id AS id',
        'u.usr_tenant_id AS tenant_id',
        'u.usr_email_id AS email',
        'u.usr_first_name AS first_name',
        'u.usr_last_name AS last_name',
        'u.usr_password_hash AS password_hash',
        'u.usr_role_id AS role_id',
        'u.usr_status AS status',
        'u.usr_is_deleted AS is_deleted',
        'r.rol_code AS role_code',
        'r.rol_permissions AS permissions',
        'r.rol_status AS role_status',
        'r.rol_is_deleted AS role_is_deleted',
      ])
      .from('app_users', 'u')
      .leftJoin('app_roles', 'r', 'r.rol_id = u.usr_role_id AND r.rol_tenant_id = u.usr_tenant_id')
      .where('u.usr_tenant_id = :tenantId', { tenantId: Number(tenantId) })
      .andWhere(where, params)
      .getRawOne<Record<string, unknown>>();
    if (!row) return undefined;
    const roleActive =
      row.role_code != null && Number(row.role_status ?? 1) === 1 && !toBool(row.role_is_deleted);
    return {
      id: Number(row.id),
      tenantId: String(row.tenant_id),
      email: String(row.email),
      firstName: (row.first_name as string | null) ?? null,
      lastName: (row.last_name as string | null) ?? null,
      passwordHash: (row.password_hash as string | null) ?? null,
      roleId: row.role_id == null ? null : Number(row.role_id),
      roleCode: roleActive ? String(row.role_code) : null,
      permissions: roleActive ? parsePermissions(row.permissions) : [],
      active: Number(row.status) === 1 && !toBool(row.is_deleted),
    };
  }
}
