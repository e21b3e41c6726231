import { Injectable } from '@nestjs/common';
import type { SelectQueryBuilder } from 'typeorm';
import { DatabaseService } from '../../database/database.service';
import { columnText } from '../../database/raw-values';
import { configRows, tenantRowsFirst } from '../../database/scope/tenant-rows';

/** A row of app_dataview_configs (spec §2.9 variant B) as read. */
export interface DataviewConfigRow {
  dvc_id: number;
  dvc_tenant_id: number | null;
  dvc_code: string;
  dvc_description: string | null;
  dvc_source_entity: string;
  /** JSON text (D1); a driver that parses JSON columns itself gives it back as text. */
  dvc_config: string | null;
}

const DATAVIEW_TABLE = { table: 'app_dataview_configs', prefix: 'dvc' };

const COLUMNS = [
  'dvc_id',
  'dvc_tenant_id',
  'dvc_code',
  'dvc_description',
  'dvc_source_entity',
  'dvc_config',
] as const satisfies ReadonlyArray<keyof DataviewConfigRow>;

function toRow(raw: Record<string, unknown>): DataviewConfigRow {
  return {
    dvc_id: Number(raw.dvc_id),
    dvc_tenant_id:
      raw.dvc_tenant_id === null || raw.dvc_tenant_id === undefined ? null : Number(raw.dvc_tenant_id),
    dvc_code: String(raw.dvc_code),
    dvc_description: columnText(raw.dvc_description),
    dvc_source_entity: String(raw.dvc_source_entity),
    dvc_config: columnText(raw.dvc_config),
  };
}

/**
 * Queries of app_dataview_configs in the configuration database. Candidates are the system-wide rows
 * (tenant NULL) and the caller's tenant's rows only — never another tenant's — that are live
 * (`dvc_is_deleted` false or NULL) and active (`COALESCE(dvc_status, 1) = 1`).
 */
@Injectable()
export class DataviewConfigRepository {
  constructor(private readonly database: DatabaseService) {}

  /** The rows of a code the tenant can use: the tenant's rows first, then system rows, each by id. */
  async findCandidates(tenantId: string, code: string): Promise<DataviewConfigRow[]> {
    const rows = await this.usable(tenantId)
      .andWhere('d.dvc_code = :code', { code })
      .orderBy(tenantRowsFirst('d', 'dvc'), 'ASC')
      .addOrderBy('d.dvc_id', 'ASC')
      .getRawMany<Record<string, unknown>>();
    // MariaDB's and SQL Server's default collations compare case-insensitively and ignore trailing
    // spaces: codes match exactly on every dialect.
    return rows.map(toRow).filter((r) => r.dvc_code === code);
  }

  /** One usable row by id (the cached code → id lookup), still only among the tenant's candidates. */
  async findById(tenantId: string, id: number): Promise<DataviewConfigRow | undefined> {
    const raw = await this.usable(tenantId)
      .andWhere('d.dvc_id = :id', { id })
      .getRawOne<Record<string, unknown>>();
    return raw ? toRow(raw) : undefined;
  }

  private usable(tenantId: string): SelectQueryBuilder<Record<string, unknown>> {
    return configRows(this.database.dataSource, DATAVIEW_TABLE, 'd', tenantId).select(
      COLUMNS.map((c) => `d.${c} AS ${c}`),
    );
  }
}
