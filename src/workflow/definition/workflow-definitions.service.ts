import { Injectable } from '@nestjs/common';
import type { SelectQueryBuilder } from 'typeorm';
import { NotFoundError } from '../../common/errors/app-error';
import { DatabaseService } from '../../database/database.service';
import { tenantNumber } from '../../database/raw-values';
import { textOf } from '../instance/json';
import { parseWorkflowSchema, type WorkflowSchema } from './workflow-schema';

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

/** A definition ready to run: its row and its validated schema (D35). */
export interface WorkflowDefinition extends WorkflowSummary {
  schema: WorkflowSchema;
}

interface DefinitionRow extends WorkflowSummary {
  rawSchema: string | null;
}

/**
 * Workflow definitions from app_workflow_configs: the system's rows (tenant NULL) and the caller's
 * tenant's rows, live ones only; for a code the tenant defines, its rows replace the system's.
 * Starting takes the named version, or the newest active one. A definition's schema is validated
 * when loaded (workflow-schema.ts): an invalid one answers 400 naming the step and never runs.
 * Parsed schemas are kept per row id and last-modified value, so an edit is seen at once.
 */
@Injectable()
export class WorkflowDefinitionsService {
  private readonly parsed = new Map<string, WorkflowSchema>();

  constructor(private readonly database: DatabaseService) {}

  /** `GET /api/v1/workflows`: every version the tenant can see, by code then version. */
  async list(tenantId: string): Promise<WorkflowSummary[]> {
    const rows = await this.rows(tenantId);
    return this.visible(rows).map(({ rawSchema: _schema, ...summary }) => summary);
  }

  /** The definition a start names (code, optional version); 404 when there is none. */
  async resolve(tenantId: string, code: string, version?: number): Promise<WorkflowDefinition> {
    const rows = this.visible(await this.rows(tenantId, code)).filter((r) => r.code === code);
    const candidates =
      version === undefined
        ? rows.filter((r) => r.status === 'active').sort((a, b) => b.version - a.version)
        : rows.filter((r) => r.version === version && r.status === 'active');
    const row = candidates[0];
    if (!row)
      throw new NotFoundError(
        version === undefined
          ? `Workflow ${code} not found`
          : `Workflow ${code} has no active version ${version}`,
        null,
        { workflowCode: code },
      );
    return this.withSchema(row);
  }

  /** The definition an instance runs (by row id, whatever its status now). */
  async byId(tenantId: string, id: number): Promise<WorkflowDefinition> {
    const raws = await this.query(tenantId)
      .andWhere('w.wft_id = :id', { id })
      .getRawMany<Record<string, unknown>>();
    const row = raws.map((r) => this.toRow(r))[0];
    if (!row) throw new NotFoundError(`Workflow definition ${id} not found`);
    return this.withSchema(row);
  }

  private withSchema(row: DefinitionRow): WorkflowDefinition {
    const key = `${row.id}:${row.rawSchema ?? ''}`;
    let schema = this.parsed.get(key);
    if (!schema) {
      schema = parseWorkflowSchema(row.rawSchema);
      if (this.parsed.size >= 500) this.parsed.clear();
      this.parsed.set(key, schema);
    }
    const { rawSchema: _raw, ...summary } = row;
    return { ...summary, schema };
  }

  /** For each code, the tenant's rows when it has any, else the system's. */
  private visible(rows: DefinitionRow[]): DefinitionRow[] {
    const tenantCodes = new Set(rows.filter((r) => r.scope === 'tenant').map((r) => r.code));
    return rows
      .filter((r) => r.scope === 'tenant' || !tenantCodes.has(r.code))
      .sort((a, b) => (a.code === b.code ? a.version - b.version : a.code < b.code ? -1 : 1));
  }

  private async rows(tenantId: string, code?: string): Promise<DefinitionRow[]> {
    const qb = this.query(tenantId);
    if (code !== undefined) qb.andWhere('w.wft_code = :code', { code });
    const raws = await qb.getRawMany<Record<string, unknown>>();
    // Collations that ignore case or trailing spaces: codes match exactly on every dialect.
    return raws.map((r) => this.toRow(r)).filter((r) => code === undefined || r.code === code);
  }

  private query(tenantId: string): SelectQueryBuilder<Record<string, unknown>> {
    return this.database.dataSource
      .createQueryBuilder()
      .select([
        'w.wft_id AS wft_id',
        'w.wft_tenant_id AS wft_tenant_id',
        'w.wft_code AS wft_code',
        'w.wft_name AS wft_name',
        'w.wft_description AS wft_description',
        'w.wft_status AS wft_status',
        'w.wft_version AS wft_version',
        'w.wft_schema AS wft_schema',
      ])
      .from('app_workflow_configs', 'w')
      .where('(w.wft_tenant_id IS NULL OR w.wft_tenant_id = :tenant)', { tenant: tenantNumber(tenantId) })
      .andWhere('(w.wft_is_deleted = :notDeleted OR w.wft_is_deleted IS NULL)', { notDeleted: false });
  }

  private toRow(raw: Record<string, unknown>): DefinitionRow {
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
}
