import { Injectable } from '@nestjs/common';
import { DatabaseService } from '../database/database.service';
import { columnText } from '../database/raw-values';
import { everyTenantConfigRows } from '../database/scope/tenant-rows';

const PROFILE_TABLE = { table: 'app_object_profiles', prefix: 'prf' };
const REGISTRY_TABLE = { table: 'app_object_registries', prefix: 'obj' };

/** A live, active row of app_object_profiles as the catalog reads it (spec §2.6). */
export interface CatalogProfileRow {
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

const TEXT_COLUMNS = [
  'prf_description',
  'prf_mode_code',
  'prf_policy',
  'prf_payload',
  'prf_policy_tenantpolicy',
  'prf_policy_projection',
  'prf_policy_encryption_required',
  'prf_policy_audit_level',
] as const;

/** The tables whose rows the profile catalog is built from (spec §4.5: a write to them reloads it). */
export const CATALOG_SOURCE_TABLES = ['app_object_profiles', 'app_object_registries'] as const;

/** `dbo.app_object_profiles`, `"App_Object_Profiles"` → `app_object_profiles`. */
export function bareTableName(table: string): string {
  const last = table.split('.').pop() ?? table;
  return last.replace(/^["[`]|["\]`]$/g, '').toLowerCase();
}

/**
 * Queries of the start-up profile catalog (spec §4.5): every tenant's profiles at once, which the
 * profile loader's repository (one tenant, one entity) does not offer.
 */
@Injectable()
export class ProfileCatalogRepository {
  constructor(private readonly database: DatabaseService) {}

  /** Every live, active profile of every tenant and the system-wide ones, by prf_id. */
  async activeProfiles(): Promise<CatalogProfileRow[]> {
    const rows = await everyTenantConfigRows(this.database.dataSource, PROFILE_TABLE, 'p')
      .select('p.*')
      .orderBy('p.prf_id', 'ASC')
      .getRawMany<Record<string, unknown>>();
    return rows.map((raw) => {
      const row = {
        prf_id: Number(raw.prf_id),
        prf_tenant_id:
          raw.prf_tenant_id === null || raw.prf_tenant_id === undefined ? null : Number(raw.prf_tenant_id),
        prf_code: String(raw.prf_code),
        prf_object_code: String(raw.prf_object_code),
      } as CatalogProfileRow;
      for (const c of TEXT_COLUMNS) (row as unknown as Record<string, string | null>)[c] = columnText(raw[c]);
      return row;
    });
  }

  /**
   * The registry codes (any tenant's rows, live and active) whose table is one of the catalog's
   * sources: their collection events reload the catalog (spec §4.5).
   */
  async catalogEntityCodes(): Promise<string[]> {
    const rows = await everyTenantConfigRows(this.database.dataSource, REGISTRY_TABLE, 'r')
      .select('r.obj_code', 'code')
      .addSelect('r.obj_payload_table', 'payload_table')
      .addSelect('r.obj_payload_object_name', 'object_name')
      .getRawMany<Record<string, unknown>>();
    const sources: readonly string[] = CATALOG_SOURCE_TABLES;
    const codes = rows
      .filter((r) => {
        const table = columnText(r.payload_table) ?? columnText(r.object_name);
        return table !== null && sources.includes(bareTableName(table));
      })
      .map((r) => String(r.code));
    return [...new Set(codes)].sort();
  }
}
