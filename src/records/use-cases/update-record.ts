import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { assertCanPerform } from '../../profile/access/can-perform';
import { FieldError, NotFoundError, ValidationError } from '../../common/errors/app-error';
import { fromDbTimestamp, toDbTimestamp } from '../../database/dialect/timestamps';
import type { ExpectedToken } from '../concurrency-token';
import type { EntityAuditEntry } from '../audit.service';
import type { RecordContext } from '../record-context';
import type { WriteTx } from '../write-tx';
import type { WriteRow } from '../records-write.repository';
import type { Row } from '../records-read.repository';
import { writeScope } from '../scope';
import { checkPayload, resolveEchoes } from '../validation';
import { isRecordId, toDb } from '../values';
import { RecordWriteSupport, type WriteHooks } from './write-support';
import { nextVersion, parseJsonObject, revokesSessions, snapshotFields } from './write-values';

/** How an update is recorded: a restore of an earlier version is its own audit event (D56). */
export interface UpdateOptions {
  event?: 'entity.updated' | 'entity.restored';
}

/**
 * Update a record (spec §4.3 update rules 1-6, D24, D43, D46): the row is loaded in the caller's
 * write scope, values echoed back as read are ignored, the token must match (a NULL one only
 * `null`), the UPDATE is a compare-and-set on it; a new password or role revokes the user's older
 * tokens; audit in the transaction, invalidation and event after it. Answers the whole record.
 */
/** An update checked before its transaction (the access decision, the payload, the token). */
export interface PreparedUpdate {
  id: number;
  checked: ReturnType<typeof checkPayload>;
  secrets: Awaited<ReturnType<RecordWriteSupport['transformSecrets']>>;
  expected: ExpectedToken;
}

/** A batch's rows loaded by UpdateRecord.preload, by id (an id not found is absent). */
export type Preloaded = ReadonlyMap<number, WriteRow>;

/** What an update did inside its transaction. */
export interface UpdateDone {
  id: number;
  entry: EntityAuditEntry;
  record: Row;
  token: string;
}

@Injectable()
export class UpdateRecord {
  constructor(private readonly support: RecordWriteSupport) {}

  async execute(
    ctx: RecordContext,
    id: number,
    body: unknown,
    expected: ExpectedToken,
    hooks: WriteHooks = {},
    options: UpdateOptions = {},
  ): Promise<Row> {
    const prepared = await this.prepare(ctx, id, body, expected);
    const s = this.support;
    const done = await s.withTransaction(ctx, (tx) => this.inTransaction(ctx, tx, prepared, hooks, options));
    await s.afterCommit(ctx, done.entry, [{ entity: ctx.entity, ids: [done.id] }]);
    return this.answer(ctx, done);
  }

  /** The steps before the transaction; a bulk write (D51) runs them per row too. */
  async prepare(
    ctx: RecordContext,
    id: number,
    body: unknown,
    expected: ExpectedToken,
  ): Promise<PreparedUpdate> {
    assertCanPerform('update', ctx);
    const { entity, policy } = ctx;
    if (!isRecordId(id)) throw new NotFoundError(`${entity.code} ${id} not found`);
    const checked = checkPayload(entity, policy, body, 'update');
    if (
      checked.errors.length === 0 &&
      checked.values.length === 0 &&
      checked.secrets.length === 0 &&
      checked.deferred.length === 0
    )
      checked.errors.push({ field: 'body', error: 'names no field to update' });
    // D24: a missing or unreadable token is refused before anything is read.
    if (expected.error) throw new ValidationError('Validation failed', [expected.error, ...checked.errors]);
    const secrets =
      checked.errors.length === 0 ? await this.support.transformSecrets(entity, checked.secrets) : [];
    return { id, checked, secrets, expected };
  }

  /**
   * The rows a batch of updates will write, loaded in one statement in `tx` as `inTransaction`
   * loads each (the caller's write scope, the snapshot fields): a bulk update's rows (D51) then
   * skip their own load. Safe to read early: the UPDATE is a compare-and-set on the token read
   * here, so a row changed meanwhile is still answered 409.
   */
  async preload(ctx: RecordContext, tx: WriteTx, ids: number[]): Promise<Preloaded> {
    assertCanPerform('update', ctx);
    const { entity, policy } = ctx;
    const scope = writeScope(ctx, entity, policy);
    return this.support.repository.loadMany(tx.data, entity, scope, snapshotFields(entity), ids);
  }

  /** The write itself on the caller's transaction: load, echoes, validation, compare-and-set, audit. */
  async inTransaction(
    ctx: RecordContext,
    tx: WriteTx,
    prepared: PreparedUpdate,
    hooks: WriteHooks = {},
    options: UpdateOptions = {},
    preloaded?: Preloaded,
  ): Promise<UpdateDone> {
    // Asked again: this entry point may be called without prepare (a bulk row, a job).
    assertCanPerform('update', ctx);
    const { id, checked, secrets, expected } = prepared;
    const { entity, policy } = ctx;
    const s = this.support;
    const fields = snapshotFields(entity);
    const scope = writeScope(ctx, entity, policy);
    await s.lockUniqueValues(tx, entity, ctx.tenantId, checked.values);
    // Rule 1: the existing record, in the caller's write scope (loaded with its batch, or now).
    const existing = preloaded
      ? preloaded.get(id)
      : await s.repository.load(tx.data, entity, scope, fields, id);
    if (!existing) throw new NotFoundError(`${entity.code} ${id} not found`);
    const before = s.typed(fields, existing.fields);
    // D43: values the client read and sends back unchanged (masked, read-only) are ignored.
    const echoes = resolveEchoes(entity, policy, checked.deferred, s.shown(entity, policy, before));
    if (echoes.values.length > 0) await s.lockUniqueValues(tx, entity, ctx.tenantId, echoes.values);
    const values = [...checked.values, ...echoes.values];
    // Rule 2: validation; uniqueness only where the value changes.
    const changed = values.filter((v) => !s.sameValue(v.field, existing.fields[v.field.name], v.value));
    const errors: FieldError[] = [
      ...checked.errors,
      ...echoes.errors,
      ...(await s.checkAgainstDb(tx, entity, ctx.tenantId, changed, id)),
    ];
    if (errors.length > 0) throw new ValidationError('Validation failed', errors);
    // Rule 3 (D24): a row never written by the service (NULL) matches only `null`, never skipped.
    const storedMs = fromDbTimestamp(existing.lastModifiedRaw, tx.driverType);
    if (storedMs !== expected.ms) throw s.stale(entity, id, storedMs);
    // Strictly later than the stored value, so a token is never valid twice.
    const at = Math.max(Date.now(), (storedMs ?? 0) + 1);
    const set: Row = {};
    for (const v of values) set[v.field.column] = toDb(v.field, v.value);
    for (const secret of secrets) set[secret.column] = secret.value;
    const audit = parseJsonObject(existing.auditRaw);
    audit.updated_by = ctx.user.email;
    audit.updated_at = new Date(at).toISOString();
    const version = nextVersion(audit.version);
    audit.version = version;
    set[entity.columns.auditData] = JSON.stringify(audit);
    set[entity.columns.lastModified] = toDbTimestamp(at);
    // Rule 4: scoped by id, tenant and not deleted, and a compare-and-set on the value just read.
    const { affected, row: stored } = await s.repository.updateAndRead(
      tx.data,
      entity,
      scope,
      id,
      set,
      { value: existing.lastModifiedRaw },
      fields,
    );
    if (affected !== 1) {
      const now = await s.repository.load(tx.data, entity, scope, fields, id);
      if (!now) throw new NotFoundError(`${entity.code} ${id} not found`);
      throw s.stale(entity, id, fromDbTimestamp(now.lastModifiedRaw, tx.driverType));
    }
    // A new password or a new role ends every session opened before it (D46, issue 9 #4).
    if (secrets.some((x) => x.revokesTokens) || changed.some((v) => revokesSessions(entity, v.field)))
      await s.revokeTokensOf(tx, entity, ctx.tenantId, id, at);
    const after = stored ? s.typed(fields, stored.fields) : { ...before, ...s.snapshot(entity, id, values) };
    const names = [...changed.map((v) => v.field.name), ...secrets.map((x) => x.input)];
    s.emit(
      tx,
      ctx,
      entity,
      options.event === 'entity.restored' ? 'restored' : 'updated',
      id,
      names,
      { ...after },
      at,
    );
    // Write-only inputs are never stored in the audit, but that they changed is.
    for (const secret of secrets) after[secret.input] = '[changed]';
    const auditEntry = s.entry(ctx, options.event ?? 'entity.updated', id, before, after, at, {
      version,
      changed: [...changed.map((v) => v.field.name), ...secrets.map((x) => x.input)],
      operationId: randomUUID(),
    });
    s.recordAudit(ctx, tx, auditEntry);
    await hooks.beforeCommit?.(tx, id);
    return { id, entry: auditEntry, record: after, token: new Date(at).toISOString() };
  }

  /** The answer (D43): the whole record as a read shows it, with its new token. */
  answer(ctx: RecordContext, done: UpdateDone): Row {
    return this.support.present(ctx.entity, ctx.policy, done.id, done.record, done.token);
  }
}
