import { Injectable } from '@nestjs/common';
import { DatabaseService } from '../database/database.service';
import { exactEquals } from '../database/dialect';
import { tokenOf } from '../records/concurrency-token';
import type { ConfigKindDef, ConfigRow } from './config-kinds';
import { columnText } from '../database/raw-values';
import { configRows, tenantRowsFirst } from '../database/scope/tenant-rows';

/**
 * Reads of the SPA configuration tables (app_page_configs, app_navigation_configs, app_value_sets).
 * Candidates are the system-wide rows (tenant NULL) and the caller's tenant's rows only — never
 * another tenant's — that are live (`<p>_is_deleted` false or NULL) and active
 * (`COALESCE(<p>_status, 1) = 1`). Table and column names come from CONFIG_KINDS, never from input.
 */
@Injectable()
export class ConfigDeliveryRepository {
  constructor(private readonly database: DatabaseService) {}

  /** The usable rows of a code: the tenant's first, then the system's, each by id. */
  async findCandidates(def: ConfigKindDef, tenantId: string, code: string): Promise<ConfigRow[]> {
    const p = def.prefix;
    const raw = await configRows(this.database.dataSource, def, 'c', tenantId)
      .select(`c.${p}_id`, 'id')
      .addSelect(`c.${p}_tenant_id`, 'tenant_id')
      .addSelect(`c.${p}_code`, 'code')
      .addSelect(def.nameColumn === null ? 'NULL' : `c.${def.nameColumn}`, 'name')
      .addSelect(def.typeColumn === null ? 'NULL' : `c.${def.typeColumn}`, 'type')
      .addSelect(def.objectColumn === null ? 'NULL' : `c.${def.objectColumn}`, 'object_code')
      .addSelect(`c.${def.bodyColumn}`, 'body')
      .addSelect(`c.${p}_add_dtls`, 'add_dtls')
      .addSelect(`c.${p}_last_modified`, 'last_modified')
      .andWhere(exactEquals(this.database.dialect, `c.${p}_code`, 'code'), { code })
      .orderBy(tenantRowsFirst('c', p), 'ASC')
      .addOrderBy(`c.${p}_id`, 'ASC')
      .getRawMany<Record<string, unknown>>();
    const driverType = this.database.dataSource.driver.options.type;
    // exactEquals already compares bytes on MariaDB and SQL Server; trailing spaces are checked here.
    return raw.map((r) => this.toRow(r, driverType)).filter((r) => r.code === code);
  }

  private toRow(raw: Record<string, unknown>, driverType: string): ConfigRow {
    return {
      id: Number(raw.id),
      tenantId: raw.tenant_id === null || raw.tenant_id === undefined ? null : Number(raw.tenant_id),
      code: String(raw.code),
      name: columnText(raw.name),
      type: columnText(raw.type),
      objectCode: columnText(raw.object_code),
      body: columnText(raw.body),
      addDtls: columnText(raw.add_dtls),
      lastModified: tokenOf(raw.last_modified, driverType),
    };
  }
}
