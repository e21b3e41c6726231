import { Injectable } from '@nestjs/common';
import { DatabaseService } from '../../database/database.service';
import { configRows } from '../../database/scope/tenant-rows';
import { textOf } from '../instance/json';

/** A row of app_workflow_configs (spec §2.8) as listed. */
export interface WorkflowSummary {
  id: number;
  code: string;
  name: string | null;
  description: string | null;
  status: 'active' | 'inactive';
  version: number;
  scope: 'system' | 'tenant';
}

export interface DefinitionRow extends WorkflowSummary {
  rawSchema: string | null;
}

const WORKFLOW_TABLE = { table: 'app_workflow_configs', prefix: 'wft' };

/**
 * Queries of app_workflow_configs: the system's rows (tenant NULL) and the caller's tenant's rows,
 * live ones, active or not (a list shows the status; an instance runs its version whatever its
 * status now).
 */
@Injectable()
export class WorkflowDefinitionsRepository {
  constructor(private readonly database: DatabaseService) {}

  /** Every row the tenant can see, or those of one code. */
  async rows(tenantId: string, code?: string): Promise<DefinitionRow[]> {
    const qb = this.query(tenantId);
    if (code !== undefined) qb.andWhere('w.wft_code = :code', { code });
    const raws = await qb.getRawMany<Record<string, unknown>>();
    // Collations that ignore case or trailing spaces: codes match exactly on every dialect.
    return raws.map(toRow).filter((r) => code === undefined || r.code === code);
  }

  /** One row by id, among the rows the tenant can see. */
  async byId(tenantId: string, id: number): Promise<DefinitionRow | undefined> {
    const raw = await this.query(tenantId)
      .andWhere('w.wft_id = :id', { id })
      .getRawOne<Record<string, unknown>>();
    return raw ? toRow(raw) : undefined;
  }

  private query(tenantId: string) {
    return configRows(this.database.dataSource, WORKFLOW_TABLE, 'w', tenantId, {
      includeInactive: true,
    }).select([
      'w.wft_id AS wft_id',
      'w.wft_tenant_id AS wft_tenant_id',
      'w.wft_code AS wft_code',
      'w.wft_name AS wft_name',
      'w.wft_description AS wft_description',
      'w.wft_status AS wft_status',
      'w.wft_version AS wft_version',
      'w.wft_schema AS wft_schema',
    ]);
  }
}

function toRow(raw: Record<string, unknown>): DefinitionRow {
  return {
    id: Number(raw.wft_id),
    code: String(textOf(raw.wft_code)),
    name: textOf(raw.wft_name),
    description: textOf(raw.wft_description),
    status: Number(raw.wft_status ?? 1) === 1 ? 'active' : 'inactive',
    version: Number(raw.wft_version ?? 1),
    scope: raw.wft_tenant_id === null || raw.wft_tenant_id === undefined ? 'system' : 'tenant',
    rawSchema: textOf(raw.wft_schema),
  };
}
