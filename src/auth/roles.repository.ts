import { Injectable } from '@nestjs/common';
import { DatabaseService } from '../database/database.service';
import { toBool } from '../tenant/tenants.repository';

/** Queries of app_roles for authentication; every query is restricted to one tenant's own roles. */
@Injectable()
export class RolesRepository {
  constructor(private readonly database: DatabaseService) {}

  /** Id of the tenant's live, active role with this code; undefined when there is none. */
  async findActiveIdByCode(tenantId: string, code: string): Promise<number | undefined> {
    const row = await this.database.dataSource
      .createQueryBuilder()
      .select(['r.rol_id AS id', 'r.rol_status AS status', 'r.rol_is_deleted AS is_deleted'])
      .from('app_roles', 'r')
      .where('r.rol_tenant_id = :tenantId AND r.rol_code = :code', { tenantId: Number(tenantId), code })
      .getRawOne<Record<string, unknown>>();
    if (!row || Number(row.status) !== 1 || toBool(row.is_deleted)) return undefined;
    return Number(row.id);
  }
}
