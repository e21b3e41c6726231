import type { DatabaseService } from '../database/database.service';
import { toBool } from '../tenant/tenants.repository';

/** Reads of the configuration tables the OpenAPI document is generated from (value sets, tenants). */
export class OpenApiCatalogRepository {
  constructor(private readonly database: DatabaseService) {}

  /** The system-wide, live, active value sets (spec 2.10): vs_code → the codes of its values. */
  async systemValueSets(): Promise<Map<string, string[]>> {
    const rows = await this.database.dataSource
      .createQueryBuilder()
      .select('v.vs_code', 'code')
      .addSelect('v.vs_values', 'vals')
      .from('app_value_sets', 'v')
      .where('v.vs_tenant_id IS NULL')
      .andWhere('(v.vs_is_deleted = :notDeleted OR v.vs_is_deleted IS NULL)', { notDeleted: 0 })
      .andWhere('COALESCE(v.vs_status, 1) = 1')
      .orderBy('v.vs_id', 'ASC')
      .getRawMany<{ code: unknown; vals: unknown }>();
    const out = new Map<string, string[]>();
    for (const row of rows) {
      const code = String(row.code);
      if (out.has(code)) continue;
      let values: unknown = row.vals;
      if (typeof values === 'string') {
        try {
          values = JSON.parse(values);
        } catch {
          continue;
        }
      }
      if (!Array.isArray(values)) continue;
      out.set(
        code,
        values
          .map((v) => (v && typeof v === 'object' ? (v as Record<string, unknown>).code : undefined))
          .filter((c): c is string => typeof c === 'string'),
      );
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
