import type { DatabaseService } from '../database/database.service';
import { systemConfigRows } from '../database/scope/tenant-rows';
import { VALUE_SET_TABLE, valueSetCodes } from '../registry/value-sets';
import { toBool } from '../tenant/tenants.repository';

/** Reads of the configuration tables the OpenAPI document is generated from (value sets, tenants). */
export class OpenApiCatalogRepository {
  constructor(private readonly database: DatabaseService) {}

  /** The system-wide, live, active value sets (spec 2.10): vs_code → the codes of its values. */
  async systemValueSets(): Promise<Map<string, string[]>> {
    const rows = await systemConfigRows(this.database.dataSource, VALUE_SET_TABLE, 'v')
      .select('v.vs_code', 'code')
      .addSelect('v.vs_values', 'vals')
      .orderBy('v.vs_id', 'ASC')
      .getRawMany<{ code: unknown; vals: unknown }>();
    const out = new Map<string, string[]>();
    for (const row of rows) {
      const code = String(row.code);
      const codes = out.has(code) ? undefined : valueSetCodes(row.vals);
      if (codes) out.set(code, codes);
    }
    return out;
  }

  /** The first `limit` active, live tenants by id (for the development headers of Swagger UI). */
  async activeTenants(limit: number): Promise<Array<{ id: string; code: string; name: string }>> {
    const rows = await this.database.dataSource
      .createQueryBuilder()
      .select([
        't.tnt_id AS id',
        't.tnt_tenant_code AS code',
        't.tnt_tenant_name AS name',
        't.tnt_is_deleted AS deleted',
      ])
      .from('app_tenants', 't')
      .where('COALESCE(t.tnt_status, 1) = 1')
      .orderBy('t.tnt_id', 'ASC')
      .limit(limit)
      .getRawMany<Record<string, unknown>>();
    return rows
      .filter((r) => !toBool(r.deleted))
      .map((r) => ({ id: String(r.id), code: String(r.code), name: String(r.name) }));
  }
}
