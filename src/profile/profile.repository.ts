import { Injectable } from '@nestjs/common';
import { DatabaseService } from '../database/database.service';
import { configRows } from '../database/scope/tenant-rows';

export interface ProfileRow {
  prf_id: number;
  prf_tenant_id: number | null;
  prf_code: string;
  prf_description: string | null;
  prf_object_code: string;
  prf_mode_code: string;
  prf_policy: string | null;
  prf_payload: string | null;
  prf_policy_tenantpolicy: string | null;
  prf_policy_projection: string | null;
  prf_policy_encryption_required: string | null;
  prf_policy_audit_level: string | null;
}

const PROFILE_TABLE = { table: 'app_object_profiles', prefix: 'prf' };

/** Queries of app_object_profiles. */
@Injectable()
export class ProfileRepository {
  constructor(private readonly database: DatabaseService) {}

  /**
   * Spec §4.3 rules 5-7 with D20: live, active profiles of the entity, among the system-wide rows
   * and the caller's tenant's rows only; the lowest prf_id wins.
   */
  async findForEntity(tenantId: string, entityCode: string): Promise<ProfileRow | undefined> {
    const row = await configRows(this.database.dataSource, PROFILE_TABLE, 'p', tenantId)
      .select('p.*')
      .andWhere('p.prf_object_code = :entityCode', { entityCode })
      .orderBy('p.prf_id', 'ASC')
      .limit(1)
      .getRawOne<Record<string, unknown>>();
    if (!row) return undefined;
    return {
      ...(row as unknown as ProfileRow),
      prf_id: Number(row.prf_id),
      prf_tenant_id: row.prf_tenant_id == null ? null : Number(row.prf_tenant_id),
    };
  }

  /** A live, active profile by its code, among the system-wide rows and the tenant's own (D54's webhook profile). */
  async findByCode(tenantId: string, code: string): Promise<ProfileRow | undefined> {
    const row = await configRows(this.database.dataSource, PROFILE_TABLE, 'p', tenantId)
      .select('p.*')
      .andWhere('p.prf_code = :code', { code })
      .getRawOne<Record<string, unknown>>();
    if (!row) return undefined;
    return {
      ...(row as unknown as ProfileRow),
      prf_id: Number(row.prf_id),
      prf_tenant_id: row.prf_tenant_id == null ? null : Number(row.prf_tenant_id),
    };
  }
}
