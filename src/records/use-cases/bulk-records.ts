import { Injectable } from '@nestjs/common';
import { AppError, ValidationError } from '../../common/errors/app-error';
import { translateDbError } from '../../database/dialect/constraint-errors';
import { assertCanPerform, type RecordAction } from '../../profile/access/can-perform';
import type { EntityInfo } from '../../registry/registry.types';
import type { AuditLine, EntityAuditEntry } from '../audit.service';
import type { ExpectedToken } from '../concurrency-token';
import type { RecordContext } from '../record-context';
import type { Row } from '../records-read.repository';
import { TransactionLost, type WriteTx } from '../write-tx';
import { isRecordId } from '../values';
import { CreateRecord } from './create-record';
import { DeleteRecord } from './delete-record';
import { type Preloaded, UpdateRecord } from './update-record';
import type { UniqueValues } from './unique-values';
import { RecordWriteSupport } from './write-support';
import type { AcceptedValue } from '../validation';

export type BulkOperation = 'create' | 'update' | 'delete';

/**
 * One row of a bulk write, already read from its transport: a create's field values (`body`), an
 * update's id, field values and token, a delete's id. An id the record key cannot hold is NaN (the
 * row then fails as the single route would: 404).
 */
export interface BulkRowInput {
  /** create or update for this row instead of the input's operation (an import's upsert, D53). */
  operation?: 'create' | 'update';
  id?: number;
  body?: unknown;
  expected?: ExpectedToken;
}

export interface BulkInput {
  operation: BulkOperation;
  rows: BulkRowInput[];
  /** Delete only (D25): dependents go too. */
  cascade: boolean;
  /** One transaction for all: any failing row and nothing is written. */
  allOrNone: boolean;
  /** Every row runs as a write would, then the transaction is rolled back (an import's dry run, D53). */
  dryRun?: boolean;
  /**
   * Runs in the transaction after the rows, when it is about to commit (not on a dry run or an
   * all-or-none rollback), with every row's outcome: an import's idempotency record of the batch
   * (D53) commits with its rows. Its bookkeeping belongs on `tx.config`; throwing rolls all back.
   */
  beforeCommit?: (tx: WriteTx, rows: BulkRowOutcome[]) => Promise<void>;
}

/** A row's outcome: the record as the single route answers it, or the domain error it met. */
export type BulkRowOutcome =
  | {
      index: number;
      id: number | null;
      ok: true;
      record: Row | null;
      lastModified: string | null;
      /** A workflow action's row (D52): the instance it started. */
      instanceId?: number;
    }
  | { index: number; id: number | null; ok: false; error: AppError };

export interface BulkResult {
  /** workflow: a dataview action starting one instance per row (D52), answered like a bulk. */
  operation: BulkOperation | 'workflow';
  /** false when allOrNone rolled everything back because a row failed. */
  committed: boolean;
  rows: BulkRowOutcome[];
  succeeded: number;
  failed: number;
}

/** Thrown inside the transaction to roll an all-or-none bulk back; caught right outside it. */
class RolledBack extends Error {
  constructor() {
    super('bulk rolled back');
  }
}

type Done = { id: number; entry: EntityAuditEntry; removed: Array<{ entity: EntityInfo; ids: number[] }> };

/**
 * What a committed bulk still does after its commit, kept small per row (a session may write a
 * whole file): each row's audit log line without its values, and the ids per entity touched.
 */
class AfterCommit {
  readonly lines: AuditLine[] = [];
  private readonly byEntity = new Map<string, { entity: EntityInfo; ids: number[] }>();

  add(done: Done): void {
    const { event, tenantId, userId, entityCode, recordId, requestId } = done.entry;
    this.lines.push({ event, tenantId, userId, entityCode, recordId, requestId });
    for (const r of done.removed) {
      const x = this.byEntity.get(r.entity.code) ?? { entity: r.entity, ids: [] };
      for (const id of r.ids) x.ids.push(id);
      this.byEntity.set(r.entity.code, x);
    }
  }

  get changed(): Array<{ entity: EntityInfo; ids: number[] }> {
    return [...this.byEntity.values()];
  }
}

const EVENT_OF = {
  create: 'entity.created',
  update: 'entity.updated',
  delete: 'entity.deleted',
} as const satisfies Record<BulkOperation, EntityAuditEntry['event']>;

const ACTION_OF: Record<BulkOperation, RecordAction> = {
  create: 'create',
  update: 'update',
  delete: 'delete',
};

/**
 * Bulk create, update or delete (D51). Every row runs the single-record use case's own steps — its
 * checks before the transaction, then its write inside a savepoint of one shared transaction — so a
 * row's result is exactly what the single route would have answered, and a failing row undoes only
 * its own statements. `allOrNone` rolls the whole transaction back when any row failed. After the
 * commit: the rows' audit lines, and one invalidation (list keys once, one batch of collection
 * events) per entity touched.
 *
 * The access decision is the request's (the same context for every row): refused, the whole request
 * is refused. Per-row refusals remain where the decision depends on the row (a cascade onto an
 * entity the caller may not delete).
 */
@Injectable()
export class BulkRecords {
  constructor(
    private readonly support: RecordWriteSupport,
    private readonly creates: CreateRecord,
    private readonly updates: UpdateRecord,
    private readonly deletes: DeleteRecord,
  ) {}

  async execute(ctx: RecordContext, input: BulkInput): Promise<BulkResult> {
    assertCanPerform(ACTION_OF[input.operation], ctx);
    const duplicate = duplicateIds(input);
    if (duplicate.length > 0)
      throw new ValidationError(
        'Validation failed',
        duplicate.map((index) => ({
          field: `rows[${index}].id`,
          error: 'names a record an earlier row names',
        })),
      );
    let outcomes: BulkRowOutcome[] = [];
    const committed = await this.session(
      ctx,
      { ...input, beforeCommit: input.beforeCommit && ((tx) => input.beforeCommit!(tx, outcomes)) },
      async (write) => {
        outcomes = await write(input.rows);
      },
    );
    return summary(input.operation, committed, outcomes);
  }

  /**
   * One transaction fed in batches by `feed` (an all-or-none import of a whole file, D53): each
   * `write` runs its rows as `execute` does and answers their outcomes, which the caller keeps or
   * drops; between batches the transaction's pending events move to disk and only each row's id
   * and audit line stay for after the commit, so memory holds one batch, not the file. With
   * `allOrNone`, any failed row of any batch rolls everything back; so does `dryRun`. True when
   * it committed.
   */
  async session(
    ctx: RecordContext,
    options: Omit<BulkInput, 'rows' | 'beforeCommit'> & { beforeCommit?: (tx: WriteTx) => Promise<void> },
    feed: (write: (rows: BulkRowInput[]) => Promise<BulkRowOutcome[]>) => Promise<void>,
  ): Promise<boolean> {
    assertCanPerform(ACTION_OF[options.operation], ctx);
    const s = this.support;
    const after = new AfterCommit();
    let failed = false;
    try {
      await s.withTransaction(ctx, async (tx) => {
        let batches = 0;
        await feed(async (rows) => {
          if (batches++ > 0) await tx.spillEvents(ctx.tenantId);
          const outcomes = await this.writeRows(ctx, tx, options, rows, after);
          // The batch's audit rows, in a few multi-row statements: memory holds one batch's.
          await tx.flushAudits();
          if (outcomes.some((o) => !o.ok)) failed = true;
          return outcomes;
        });
        if (options.dryRun || (options.allOrNone && failed)) throw new RolledBack();
        await options.beforeCommit?.(tx);
      });
    } catch (err) {
      if (err instanceof RolledBack) return false;
      throw err;
    }
    await s.afterBulkCommit(ctx, after.lines, after.changed, EVENT_OF[options.operation]);
    return true;
  }

  /** One batch's rows in the shared transaction, each in its savepoint. */
  private async writeRows(
    ctx: RecordContext,
    tx: WriteTx,
    options: Pick<BulkInput, 'operation' | 'cascade'>,
    rows: BulkRowInput[],
    after: AfterCommit,
  ): Promise<BulkRowOutcome[]> {
    const s = this.support;
    const steps = await this.prepareAll(ctx, options, rows);
    const outcomes: BulkRowOutcome[] = new Array<BulkRowOutcome>(rows.length);
    // The unique values of the creates, locked and checked against the table once for all rows
    // (the batches before this one are in the table already: same transaction). Creates only: an
    // update row may change a unique value, which only its own query sees.
    const onlyCreates = rows.every((r) => (r.operation ?? options.operation) === 'create');
    const creates = steps.flatMap((st) => (st instanceof AppError || !st.values ? [] : [st.values]));
    const known =
      onlyCreates && creates.length > 1
        ? await s.preloadUniqueValues(tx, ctx.entity, ctx.tenantId, creates)
        : undefined;
    // The rows of the updates, loaded in one statement (each row's own load otherwise).
    const updateIds = steps.flatMap((st) =>
      st instanceof AppError || st.updates === undefined ? [] : [st.updates],
    );
    const loaded = updateIds.length > 1 ? await this.updates.preload(ctx, tx, updateIds) : undefined;
    for (const [index, step] of steps.entries()) {
      const id = rows[index].id ?? null;
      const rowId = id !== null && Number.isFinite(id) ? id : null;
      if (step instanceof AppError) {
        outcomes[index] = { index, id: rowId, ok: false, error: step };
        continue;
      }
      try {
        const result = await tx.withinSavepoint('bulk_row', () => step(tx, known, loaded));
        // The row's unique values are taken once it stands (a row undone keeps none).
        if (step.values) known?.add(step.values);
        outcomes[index] = { index, id: result.done.id, ok: true, ...result.answer };
        after.add(result.done);
      } catch (err) {
        // The transaction itself is gone: the request fails as a whole, with the row's error
        // (a deadlock: 409 busy, retry the request).
        if (err instanceof TransactionLost) throw err.failure;
        const error = translateDbError(err, ctx.entity);
        // Anything but a domain error (a lost connection, a failed undo) ends the whole request.
        if (!(error instanceof AppError)) throw err;
        outcomes[index] = { index, id: rowId, ok: false, error };
      }
    }
    return outcomes;
  }

  /**
   * Each row's steps before the transaction (payload, token, write-only inputs hashed), as the single
   * routes take them: a row failing here gets its error; the others a function to run in the
   * transaction.
   */
  private async prepareAll(
    ctx: RecordContext,
    input: Pick<BulkInput, 'operation' | 'cascade'>,
    rows: BulkRowInput[],
  ): Promise<Array<AppError | Step>> {
    const out: Array<AppError | Step> = [];
    for (const row of rows) {
      try {
        out.push(await this.prepare(ctx, input, row));
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        out.push(err);
      }
    }
    return out;
  }

  private async prepare(
    ctx: RecordContext,
    input: Pick<BulkInput, 'operation' | 'cascade'>,
    row: BulkRowInput,
  ): Promise<Step> {
    switch (row.operation ?? input.operation) {
      case 'create': {
        const prepared = await this.creates.prepare(ctx, row.body);
        const step: Step = async (tx, known) => {
          const done = await this.creates.inTransaction(ctx, tx, prepared, {}, known);
          const record = this.creates.answer(ctx, done);
          return {
            done: { ...done, removed: [{ entity: ctx.entity, ids: [done.id] }] },
            answer: { record, lastModified: done.token },
          };
        };
        step.values = prepared.checked.values;
        return step;
      }
      case 'update': {
        const id = row.id ?? NaN;
        const expected = row.expected ?? { ms: NaN, error: { field: 'lastModified', error: 'is required' } };
        // As the single route: a missing token is reported first, even for an id the key cannot hold.
        if (!isRecordId(id) && expected.error)
          throw new ValidationError('Validation failed', [expected.error]);
        const prepared = await this.updates.prepare(ctx, id, row.body, expected);
        const step: Step = async (tx, _known, loaded) => {
          const done = await this.updates.inTransaction(ctx, tx, prepared, {}, {}, loaded);
          const record = this.updates.answer(ctx, done);
          return {
            done: { ...done, removed: [{ entity: ctx.entity, ids: [done.id] }] },
            answer: { record, lastModified: done.token },
          };
        };
        step.updates = prepared.id;
        return step;
      }
      case 'delete': {
        const id = row.id ?? NaN;
        this.deletes.prepare(ctx, id);
        return async (tx) => {
          const done = await this.deletes.inTransaction(ctx, tx, id, { cascade: input.cascade });
          return { done, answer: { record: null, lastModified: null } };
        };
      }
    }
  }
}

type Answer = { record: Row | null; lastModified: string | null };

/**
 * A row's write in the transaction; a create's carries its accepted values (the batch's unique
 * check), an update's the id it updates (the batch's rows are loaded together).
 */
type Step = ((
  tx: WriteTx,
  known?: UniqueValues,
  loaded?: Preloaded,
) => Promise<{ done: Done; answer: Answer }>) & {
  values?: AcceptedValue[];
  updates?: number;
};

function summary(operation: BulkOperation, committed: boolean, rows: BulkRowOutcome[]): BulkResult {
  const failed = rows.filter((r) => !r.ok).length;
  return { operation, committed, rows, succeeded: rows.length - failed, failed };
}

/** Indexes of rows naming an id an earlier row already names (update and delete). */
function duplicateIds(input: BulkInput): number[] {
  if (input.operation === 'create') return [];
  const seen = new Set<number>();
  const out: number[] = [];
  for (const [index, row] of input.rows.entries()) {
    const id = row.id;
    if (id === undefined || !Number.isFinite(id)) continue;
    if (seen.has(id)) out.push(index);
    seen.add(id);
  }
  return out;
}
