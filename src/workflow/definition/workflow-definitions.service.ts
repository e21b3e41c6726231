import { Injectable } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { NotFoundError } from '../../common/errors/app-error';
import {
  type DefinitionRow,
  WorkflowDefinitionsRepository,
  type WorkflowSummary,
} from './workflow-definitions.repository';
import { parseWorkflowSchema, type WorkflowSchema } from './workflow-schema';

export type { WorkflowSummary };

/** A definition ready to run: its row and its validated schema (D35). */
export interface WorkflowDefinition extends WorkflowSummary {
  schema: WorkflowSchema;
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
  private readonly parsed = new LRUCache<string, WorkflowSchema>({ max: 500 });

  constructor(private readonly repository: WorkflowDefinitionsRepository) {}

  /** `GET /api/v1/workflows`: every version the tenant can see, by code then version. */
  async list(tenantId: string): Promise<WorkflowSummary[]> {
    const rows = await this.repository.rows(tenantId);
    return this.visible(rows).map(({ rawSchema: _schema, ...summary }) => summary);
  }

  /** The definition a start names (code, optional version); 404 when there is none. */
  async resolve(tenantId: string, code: string, version?: number): Promise<WorkflowDefinition> {
    const rows = this.visible(await this.repository.rows(tenantId, code)).filter((r) => r.code === code);
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
    const row = await this.repository.byId(tenantId, id);
    if (!row) throw new NotFoundError(`Workflow definition ${id} not found`);
    return this.withSchema(row);
  }

  private withSchema(row: DefinitionRow): WorkflowDefinition {
    const key = `${row.id}:${row.rawSchema ?? ''}`;
    let schema = this.parsed.get(key);
    if (!schema) {
      schema = parseWorkflowSchema(row.rawSchema);
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
}
