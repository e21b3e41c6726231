import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { assertCanPerform } from '../../profile/access/can-perform';
import { ValidationError } from '../../common/errors/app-error';
import { toDbTimestamp } from '../../database/dialect/timestamps';
import type { RecordContext } from '../record-context';
import type { Row } from '../records-read.repository';
import { writeScope } from '../scope';
import { checkPayload } from '../validation';
import { toDb } from '../values';
import type { EntityAuditEntry } from '../audit.service';
import type { WriteTx } from '../write-tx';
import type { UniqueValues } from './unique-values';
import { RecordWriteSupport, type WriteHooks } from './write-support';
import { snapshotFields } from './write-values';

/**
 * Create a record (spec §4.3 create rules 1-7, D4, D29): validation, unique-value locks, the checks
 * that need the database, the INSERT with tenant and audit columns, the audit row in the same
 * transaction, then cache invalidation and the collection event. Answers the record as a read
 * shows it (D43).
 */
/** A create checked before its transaction (the access decision, the payload, hashed secrets). */
export interface PreparedCreate {
  checked: ReturnType<typeof checkPayload>;
  secrets: Awaited<ReturnType<RecordWriteSupport['transformSecrets']>>;
}

/** What a create did inside its transaction: what the commit publishes and the answer needs. */
export interface CreateDone {
  id: number;
  entry: EntityAuditEntry;
  record: Row;
  token: string;
}

@Injectable()
export class CreateRecord {
  constructor(private readonly support: RecordWriteSupport) {}

  async execute(ctx: RecordContext, body: unknown, hooks: WriteHooks = {}): Promise<Row> {
    const prepared = await this.prepare(ctx, body);
    const s = this.support;
    const done = await s.withTransaction(ctx, (tx) => this.inTransaction(ctx, tx, prepared, hooks));
    await s.afterCommit(ctx, done.entry, [{ entity: ctx.entity, ids: [done.id] }]);
    return this.answer(ctx, done);
  }

  /** The steps before the transaction; a bulk write (D51) runs them per row too. */
  async prepare(ctx: RecordContext, body: unknown): Promise<PreparedCreate> {
    assertCanPerform('create', ctx);
    const checked = checkPayload(ctx.entity, ctx.policy, body, 'create');
    const secrets =
      checked.errors.length === 0 ? await this.support.transformSecrets(ctx.entity, checked.secrets) : [];
    return { checked, secrets };
  }

  /** The write itself on the caller's transaction: validation against the database, INSERT, audit. */
  async inTransaction(
    ctx: RecordContext,
    tx: WriteTx,
    prepared: PreparedCreate,
    hooks: WriteHooks = {},
    known?: UniqueValues,
  ): Promise<CreateDone> {
    // Asked again: this entry point may be called without prepare (a bulk row, a job).
    assertCanPerform('create', ctx);
    const { checked, secrets } = prepared;
    const { entity, policy } = ctx;
    const s = this.support;
    const now = Date.now();
    const fields = snapshotFields(entity);
    // A bulk create's batch (`known`) took every row's value locks at once before its first row,
    // outside the rows' savepoints, so they are held to the commit; a single create takes its own.
    if (!known) await s.lockUniqueValues(tx, entity, ctx.tenantId, checked.values);
    const errors = [
      ...checked.errors,
      ...(await s.checkAgainstDb(tx, entity, ctx.tenantId, checked.values, undefined, known)),
    ];
    if (errors.length > 0) throw new ValidationError('Validation failed', errors);
    const row: Row = {};
    for (const v of checked.values) row[v.field.column] = toDb(v.field, v.value);
    for (const secret of secrets) row[secret.column] = secret.value;
    const cols = entity.columns;
    row[cols.tenant] = Number(ctx.tenantId);
    if (!(cols.status in row)) row[cols.status] = 1;
    row[cols.isDeleted] = 0;
    row[cols.auditData] = JSON.stringify({
      created_by: ctx.user.email,
      created_at: new Date(now).toISOString(),
      version: 1,
    });
    row[cols.lastModified] = toDbTimestamp(now);
    const newId = await s.repository.insert(tx.data, entity, row);
    // The row as stored (defaults, rounding), read back in the transaction.
    const stored = await s.repository.load(tx.data, entity, writeScope(ctx, entity, policy), fields, newId);
    const after = stored ? s.typed(fields, stored.fields) : s.snapshot(entity, newId, checked.values);
    const auditEntry = s.entry(ctx, 'entity.created', newId, null, after, now, {
      version: 1,
      changed: Object.keys(after).filter((k) => after[k] !== null && after[k] !== undefined),
      operationId: randomUUID(),
    });
    s.recordAudit(ctx, tx, auditEntry);
    const set = [...checked.values.map((v) => v.field.name), ...secrets.map((x) => x.input)];
    s.emit(tx, ctx, entity, 'created', newId, set, after, now);
    await hooks.beforeCommit?.(tx, newId);
    return { id: newId, entry: auditEntry, record: after, token: new Date(now).toISOString() };
  }

  /** The answer (D43): the record as a read shows it. */
  answer(ctx: RecordContext, done: CreateDone): Row {
    return this.support.present(ctx.entity, ctx.policy, done.id, done.record, done.token);
  }
}
