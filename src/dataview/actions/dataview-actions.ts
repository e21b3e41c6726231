import { Injectable } from '@nestjs/common';
import { AppError, AuthorizationError, NotFoundError, ValidationError } from '../../common/errors/app-error';
import type { Actor } from '../../common/request-context';
import type { AppConfig } from '../../config/config.schema';
import { InjectConfig } from '../../config/inject-config.decorator';
import { assertCanPerform } from '../../profile/access/can-perform';
import { hasPermission } from '../../profile/access/permissions';
import { writableFieldNames } from '../../profile/policy/masking';
import { expectedToken, LAST_MODIFIED_KEY, type ExpectedToken } from '../../records/concurrency-token';
import type { RecordContext } from '../../records/record-context';
import { RecordContextFactory } from '../../records/record-context.factory';
import type { Row } from '../../records/records-read.repository';
import { BulkRecords, type BulkResult, type BulkRowOutcome } from '../../records/use-cases/bulk-records';
import { PageRecords, ReadRecord } from '../../records/use-cases/read-records';
import { UpdateRecord } from '../../records/use-cases/update-record';
import { WorkflowInstancesService } from '../../workflow/instance/workflow-instances.service';
import { DataviewConfigService, type DataviewDefinition } from '../config/dataview-config.service';
import { gridConfigOf } from '../grid/grid-config';
import { gridRow, planGrid } from '../grid/grid-query';
import type { GridRequest } from '../grid/grid-request';
import { actionsOf, type BulkActionConfig, editableFieldCodes, inlineEditOf } from './action-config';

/** The rows an action runs on: the ids the grid selected, or its whole filtered set. */
export type ActionTarget = { ids: number[] } | { all: true; request: GridRequest };

/** The role grant a workflow action needs, as the start route does. */
const WORKFLOW_GRANT = 'execute:workflow';

const actionNotFound = (code: string, actionId: string) =>
  new NotFoundError(`Dataview ${code} has no bulk action ${actionId}`);

/**
 * Dataview bulk actions and inline edits (D52), on the records core only: the dataview's source
 * entity as the caller's RecordContext (forSource: its profile, the read decision), then the bulk
 * use case of D51 for update and delete — so every row is judged as a single write — and the
 * workflow start use case for a workflow action (one instance per row, input `{recordId}`).
 */
@Injectable()
export class DataviewActions {
  constructor(
    private readonly configs: DataviewConfigService,
    private readonly contexts: RecordContextFactory,
    private readonly bulk: BulkRecords,
    private readonly reads: ReadRecord,
    private readonly pages: PageRecords,
    private readonly updates: UpdateRecord,
    private readonly workflows: WorkflowInstancesService,
    @InjectConfig() private readonly config: AppConfig,
  ) {}

  async run(
    actor: Actor,
    code: string,
    actionId: string,
    target: ActionTarget,
    confirmed: boolean,
  ): Promise<BulkResult> {
    const def = await this.configs.get(actor.tenantId, code);
    const { actions } = actionsOf(def.config);
    const action = actions.bulkActions.find((a) => a.actionId === actionId);
    // A client-side action (no operation) has nothing to run here either.
    if (!actions.enableBulkActions || !action?.operation) throw actionNotFound(code, actionId);
    if (action.requireConfirm && !confirmed)
      throw new ValidationError(`Action ${actionId} must be confirmed (confirm: true)`, {
        confirm: 'required',
      });
    const ctx = await this.contexts.forSource(actor, def.sourceEntity);
    // The operation's own decision before anything is read: a viewer's delete is one 403.
    if (action.operation === 'workflow') {
      if (!hasPermission(actor.user.permissions, WORKFLOW_GRANT))
        throw new AuthorizationError(`Permission ${WORKFLOW_GRANT} required`);
    } else assertCanPerform(action.operation, ctx);
    const rows = await this.targetRows(ctx, def, target);

    switch (action.operation) {
      case 'delete':
        return this.bulk.execute(ctx, {
          operation: 'delete',
          rows: rows.map((r) => ({ id: r.id })),
          cascade: false,
          allOrNone: false,
        });
      case 'update':
        return this.bulk.execute(ctx, {
          operation: 'update',
          rows: rows.map((r) => ({ id: r.id, body: { ...action.set }, expected: r.expected })),
          cascade: false,
          allOrNone: false,
        });
      case 'workflow':
        return this.startEach(actor, action, rows);
    }
  }

  /**
   * The rows with the token each was read with: an action sets the same values on every row (it
   * has no token of its own from the client), and the compare-and-set still refuses a row that
   * changes between this read and its write (409). A row the caller cannot read (another tenant's,
   * outside the row filter, gone) keeps no token and answers 404, as the single route would.
   */
  private async targetRows(
    ctx: RecordContext,
    def: DataviewDefinition,
    target: ActionTarget,
  ): Promise<Array<{ id: number; expected: ExpectedToken; found: boolean }>> {
    const max = this.config.writes.bulkMaxRows;
    if ('ids' in target) {
      if (target.ids.length > max) throw tooMany(target.ids.length, max);
      const out: Array<{ id: number; expected: ExpectedToken; found: boolean }> = [];
      for (const id of target.ids) {
        try {
          const record = await this.reads.execute(ctx, id);
          out.push({ id, expected: expectedToken(record[LAST_MODIFIED_KEY], undefined), found: true });
        } catch (err) {
          if (!(err instanceof NotFoundError)) throw err;
          out.push({ id, expected: { ms: NaN }, found: false });
        }
      }
      return out;
    }
    // all: the dataview's filtered set (its default filters and the request's), at most
    // source.maxRows and BULK_MAX_ROWS rows; a larger set is refused rather than cut.
    const grid = gridConfigOf(def.config);
    const plan = planGrid(grid, ctx.entity, ctx.policy, target.request);
    const limit = Math.min(grid.maxRows, max);
    const page = await this.pages.page(
      ctx,
      { ...plan.query, page: { kind: 'keyset', limit: limit + 1 } },
      plan.permissions,
    );
    if (page.records.length > limit) throw tooMany(page.records.length, limit, true);
    const key = ctx.entity.fields.find((f) => f.column === ctx.entity.primaryKeyColumn)?.name ?? 'id';
    return page.records.map((r) => ({
      id: Number(r[key]),
      expected: expectedToken(r[LAST_MODIFIED_KEY], undefined),
      found: true,
    }));
  }

  /** D52: one workflow instance per row, input `{recordId}`; a row the caller cannot read is 404. */
  private async startEach(
    actor: Actor,
    action: BulkActionConfig,
    rows: Array<{ id: number; found: boolean }>,
  ): Promise<BulkResult> {
    const out: BulkRowOutcome[] = [];
    for (const [index, row] of rows.entries()) {
      if (!row.found) {
        out.push({ index, id: row.id, ok: false, error: new NotFoundError(`Record ${row.id} not found`) });
        continue;
      }
      try {
        const started = await this.workflows.start(actor, action.workflowCode!, {
          input: { recordId: row.id },
        });
        out.push({
          index,
          id: row.id,
          ok: true,
          record: null,
          lastModified: null,
          instanceId: started.instanceId,
        });
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        out.push({ index, id: row.id, ok: false, error: err });
      }
    }
    const failed = out.filter((r) => !r.ok).length;
    return { operation: 'workflow', committed: true, rows: out, succeeded: out.length - failed, failed };
  }

  /**
   * Inline editing (D52): only where the dataview enables it, only fields of `editableColumns` that
   * the profile lets the caller write (else 400 naming the field), saved by the update use case
   * (token, validation, D43 echoes, audit); answered as the grid shows the row.
   */
  async editRow(
    actor: Actor,
    code: string,
    id: number,
    body: unknown,
    ifMatch: string | string[] | undefined,
  ): Promise<Row> {
    const def = await this.configs.get(actor.tenantId, code);
    const ctx = await this.contexts.forSource(actor, def.sourceEntity);
    const inline = inlineEditOf(def.config);
    if (!inline.enableInlineEdit) throw new NotFoundError(`Dataview ${code} has no inline editing`);
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw new ValidationError('Validation failed', [{ field: 'body', error: 'must be an object' }]);
    assertCanPerform('update', ctx);
    const editable = editableFieldCodes(def.config, inline);
    const writable = new Set(writableFieldNames(ctx.policy, ctx.entity.fields));
    const values = body as Record<string, unknown>;
    const refused = Object.keys(values)
      .filter((k) => k !== LAST_MODIFIED_KEY)
      .filter((k) => !editable.has(k) || !writable.has(k))
      .map((field) => ({ field, error: 'is not editable in this grid' }));
    if (refused.length > 0) throw new ValidationError('Validation failed', refused);
    const expected = expectedToken(values[LAST_MODIFIED_KEY], ifMatch);
    const record = await this.updates.execute(ctx, id, values, expected);
    const plan = planGrid(gridConfigOf(def.config), ctx.entity, ctx.policy, { filters: [] });
    return gridRow(record, plan.rowFields);
  }
}

function tooMany(count: number, max: number, filtered = false): AppError {
  return new AppError(
    'PAYLOAD_TOO_LARGE',
    filtered
      ? `The filtered set has more than ${max} rows; narrow the filters`
      : `An action takes at most ${max} rows; this one names ${count}`,
    { maxRows: max, rows: count },
  );
}
