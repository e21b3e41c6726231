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

export interface NewUser {
  email: string;
  passwordHash: string;
  roleId: number | null;
  firstName?: string | null;
  lastName?: string | null;
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

  /**
   * Inserts a user into the tenant (sign-up, D15) and returns it as sign-in reads it. The unique
   * index on (usr_tenant_id, usr_email_id) refuses a second account for the e-mail; the caller
   * turns that into 409.
   */
  async create(tenantId: string, user: NewUser): Promise<UserRecord> {
    const now = new Date();
    const email = normaliseEmail(user.email);
    const row = {
      usr_tenant_id: Number(tenantId),
      usr_email_id: email,
      usr_first_name: user.firstName ?? null,
      usr_last_name: user.lastName ?? null,
      usr_password_hash: user.passwordHash,
      usr_role_id: user.roleId,
      usr_status: 1,
      // 1/0, not a JS boolean: accepted by BOOLEAN, TINYINT(1), BIT and SQLite alike.
      usr_is_deleted: 0,
      usr_audit_data: JSON.stringify({ created_by: 'signup', created_at: now.toISOString() }),
      usr_add_dtls: null,
      // UTC 'YYYY-MM-DD HH:MM:SS.mmm', a literal every dialect's timestamp column takes (D4).
      usr_last_modified: now.toISOString().replace('T', ' ').replace('Z', ''),
    };
    // Without entity metadata the builder takes values in the order of the column list.
    await this.database.dataSource
      .createQueryBuilder()
      .insert()
      .into('app_users', Object.keys(row))
      .values(row)
      .execute();
    const inserted = await this.database.dataSource
      .createQueryBuilder()
      .select('u.usr_id', 'id')
      .from('app_users', 'u')
      .where('u.usr_tenant_id = :tenantId AND u.usr_email_id = :email', { tenantId: Number(tenantId), email })
      .getRawOne<{ id: unknown }>();
    const created = inserted ? await this.findById(tenantId, Number(inserted.id)) : undefined;
    if (!created) throw new Error('The inserted user could not be read back');
    return created;
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
