import { Injectable } from '@nestjs/common';
import type { DataSource, QueryRunner } from 'typeorm';
import { EntityCacheInvalidator } from '../../cache/entity-cache-invalidator';
import { ConflictError, FieldError, ServiceError } from '../../common/errors/app-error';
import { translateDbError } from '../../database/dialect/constraint-errors';
import { valueLockName } from '../../database/dialect/value-lock';
import { applyProjection } from '../../profile/policy/masking';
import type { EntityPolicy } from '../../profile/policy/policy.model';
import { RegistryService } from '../../registry/registry.service';
import type { EntityInfo, FieldDef } from '../../registry/registry.types';
import { type AuditLine, auditWanted, EntityAuditEntry, EntityAuditService } from '../audit.service';
import { LAST_MODIFIED_KEY } from '../concurrency-token';
import type { RecordContext, ScopeContext } from '../record-context';
import { RecordHooks } from '../record-hooks';
import type { Row } from '../records-read.repository';
import { RecordsWriteRepository } from '../records-write.repository';
import { WriteTx } from '../write-tx';
import { UniqueValues } from './unique-values';
import { type EntryMeta, uniqueKey, nextVersion, parseJsonObject } from './write-values';
import { toDbTimestamp } from '../../database/dialect/timestamps';
import type { CheckedPayload, AcceptedValue } from '../validation';
import { fromDb, toDb } from '../values';
import type { EventAction } from '../outbox/outbox.types';

/**
 * What a job adds to a write's own transaction (D49): a workflow step commits its node state and
 * idempotency key with the record, so that the step and its write commit (or roll back) together.
 * `beforeCommit` runs after the write and its audit row; throwing from it rolls everything back.
 * Its bookkeeping belongs on `tx.config` (the configuration database).
 */
export interface WriteHooks {
  beforeCommit?: (tx: WriteTx, id: number) => Promise<void>;
}

/** Record ids per collection-event batch after a bulk commit. */
const INVALIDATION_SLICE = 2000;

/** D37's event type of an audit event: entity.created → created, and so on. */
export const EVENT_TYPE = {
  'entity.created': 'created',
  'entity.updated': 'updated',
  'entity.deleted': 'deleted',
  'entity.restored': 'updated',
} as const;

/**
 * What every records write shares (spec §4.3, D4, D24, D29, D37, D46): the transaction on the
 * entity's database with driver errors translated, unique-value locks, the checks that need the
 * database, write-only inputs, audit entries, and what happens after the commit (cache
 * invalidation and the collection event). Used by the create, update and delete use cases only.
 */
@Injectable()
export class RecordWriteSupport {
  constructor(
    readonly repository: RecordsWriteRepository,
    private readonly registry: RegistryService,
    private readonly audit: EntityAuditService,
    private readonly caches: EntityCacheInvalidator,
    private readonly hooks: RecordHooks,
  ) {}

  stale(entity: EntityInfo, id: number, storedMs: number | null): ConflictError {
    return new ConflictError(
      `${entity.code} ${id} was changed by someone else; reload it and retry`,
      { lastModified: storedMs === null ? null : new Date(storedMs).toISOString() },
      'stale_record',
    );
  }

  /** Write-only inputs (users.password → argon2id hash, D12), hashed before the transaction opens. */
  async transformSecrets(
    entity: EntityInfo,
    secrets: CheckedPayload['secrets'],
  ): Promise<Array<{ input: string; column: string; value: string; revokesTokens: boolean }>> {
    const out: Array<{ input: string; column: string; value: string; revokesTokens: boolean }> = [];
    for (const s of secrets) {
      const field = entity.fields.find((f) => f.name === s.secret.field && f.hidden);
      if (!field) throw new ServiceError(`Write-only input ${s.secret.input} has no target field`);
      out.push({
        input: s.secret.input,
        column: field.column,
        value: await s.secret.transform(s.plain),
        revokesTokens: s.secret.revokesTokens === true,
      });
    }
    return out;
  }

  /**
   * D46: the user's tokens issued before `at` are revoked, in the write's transaction on the
   * configuration database (where app_users and the revocations live): the record is the user.
   */
  async revokeTokensOf(tx: WriteTx, entity: EntityInfo, tenantId: string, id: number, at: number) {
    if (entity.table !== 'app_users' || tx.spansTwoDatabases)
      throw new ServiceError(`${entity.code} records are not users whose sessions can be revoked`);
    await this.hooks.revokeSessions(tenantId, id, at, tx.config);
  }

  /**
   * Takes the locks of the unique values a write names (value-lock.ts) as the transaction's first
   * statement, so a concurrent writer of the same value waits until this transaction has ended, and
   * every read after it (snapshot isolation included) sees that writer's committed row.
   */
  async lockUniqueValues(
    tx: WriteTx,
    entity: EntityInfo,
    tenantId: string,
    values: AcceptedValue[],
  ): Promise<void> {
    const unique = values.filter((v) => v.field.unique && v.value !== null && v.value !== undefined);
    await this.repository.lockValues(
      tx,
      unique.map(({ field, value }) =>
        valueLockName({
          table: entity.table,
          tenantId,
          column: field.column,
          value: uniqueKey(field, toDb(field, value)),
        }),
      ),
    );
  }

  /**
   * A bulk create's unique values (D51, D53): every row's value locks taken at once (sorted, as one
   * write's), then one query per unique field for the values the table holds already.
   */
  async preloadUniqueValues(
    tx: WriteTx,
    entity: EntityInfo,
    tenantId: string,
    rows: AcceptedValue[][],
  ): Promise<UniqueValues> {
    await this.lockUniqueValues(tx, entity, tenantId, rows.flat());
    return UniqueValues.load(this.repository, tx, entity, tenantId, rows);
  }

  /** Value sets, uniqueness and references of accepted values (create rule 1, update rule 2). */
  async checkAgainstDb(
    tx: WriteTx,
    entity: EntityInfo,
    tenantId: string,
    values: AcceptedValue[],
    exceptId?: number,
    known?: UniqueValues,
  ): Promise<FieldError[]> {
    const errors: FieldError[] = [];
    for (const { field, value } of values) {
      if (value === null || value === undefined) continue;
      if (field.valueSet !== undefined) {
        const codes = await this.repository.valueSetCodes(tx.config, field.valueSet, tenantId);
        if (!codes || typeof value !== 'string' || !codes.has(value)) {
          errors.push({ field: field.name, error: `must be one of the values of ${field.valueSet}` });
          continue;
        }
      }
      if (
        field.unique &&
        (known?.answers(field, toDb(field, value)) ??
          (await this.repository.existsWithValue(
            tx.data,
            entity,
            tenantId,
            field,
            toDb(field, value),
            exceptId,
          )))
      ) {
        errors.push({ field: field.name, error: 'must be unique; the value is already used' });
        continue;
      }
      if (field.references) {
        const target = await this.registry.resolve(tenantId, field.references.entity);
        const targetField = target?.fields.find((f) => f.name === field.references?.field);
        const found =
          target !== undefined &&
          targetField !== undefined &&
          (await this.onRunnerOf(tx, target, tenantId, (qr) =>
            // The referenced parent is locked (and re-read as live) until this write commits, so a
            // concurrent delete of it waits and then counts this row (D25, issue 9).
            this.repository.existsWithValue(
              qr,
              target,
              tenantId,
              targetField,
              value,
              undefined,
              tx.owns(qr) ? 'referenced-parent' : undefined,
            ),
          ));
        if (!found)
          errors.push({
            field: field.name,
            error: `must reference an existing ${field.references.entity} record`,
          });
      }
    }
    return errors;
  }

  /**
   * Runs a read of `entity` on the write's runner for its database, or, for a third database, on a
   * runner of its own (a reference check across connections is a read, never part of the write).
   */
  async onRunnerOf<T>(
    tx: WriteTx,
    entity: EntityInfo,
    tenantId: string,
    read: (qr: QueryRunner) => Promise<T>,
  ): Promise<T> {
    const ds: DataSource = this.repository.dataSourceFor(entity, tenantId);
    if (ds === tx.dataSource) return read(tx.data);
    if (ds === tx.config.connection) return read(tx.config);
    const qr = ds.createQueryRunner();
    try {
      return await read(qr);
    } finally {
      await qr.release();
    }
  }

  /** Spec §3.1, D4: is_deleted = 1, deleted_by/deleted_at in the audit data, last_modified. */
  softDeleteSet(entity: EntityInfo, auditRaw: unknown, ctx: ScopeContext, at: number): Row {
    const audit = parseJsonObject(auditRaw);
    audit.deleted_by = ctx.user.email;
    audit.deleted_at = new Date(at).toISOString();
    audit.version = nextVersion(audit.version);
    return {
      [entity.columns.isDeleted]: 1,
      [entity.columns.auditData]: JSON.stringify(audit),
      [entity.columns.lastModified]: toDbTimestamp(at),
    };
  }

  sameValue(field: FieldDef, stored: unknown, value: unknown): boolean {
    const a = fromDb(field, stored);
    const b = fromDb(field, toDb(field, value));
    return field.type === 'email' && typeof a === 'string' && typeof b === 'string'
      ? a.toLowerCase() === b.toLowerCase()
      : JSON.stringify(a) === JSON.stringify(b);
  }

  typed(fields: FieldDef[], raw: Row): Row {
    const out: Row = {};
    for (const f of fields) out[f.name] = fromDb(f, raw[f.name]);
    return out;
  }

  /** `{id, ...values}` in JSON form, hidden fields left out. */
  snapshot(entity: EntityInfo, id: number, values: AcceptedValue[]): Row {
    const out: Row = {};
    const key = entity.fields.find((f) => f.column === entity.primaryKeyColumn);
    if (key) out[key.name] = id;
    for (const v of values) if (!v.field.hidden) out[v.field.name] = fromDb(v.field, toDb(v.field, v.value));
    return out;
  }

  /** A record (typed, hidden fields left out) as a read shows it: projection and masking applied. */
  shown(entity: EntityInfo, policy: EntityPolicy, record: Row): Row {
    return applyProjection(record, policy, entity.fields);
  }

  /**
   * The answer of a create or update (D43): the whole record as a read shows it — `{id, ...fields,
   * lastModified}`, projection and masking applied (a field excluded from the projection is
   * written but not shown).
   */
  present(entity: EntityInfo, policy: EntityPolicy, id: number, record: Row, token: string): Row {
    return { id, ...this.shown(entity, policy, record), [LAST_MODIFIED_KEY]: token };
  }

  entry(
    ctx: RecordContext,
    event: EntityAuditEntry['event'],
    recordId: number,
    before: Row | null,
    after: Row | null,
    at: number,
    meta: EntryMeta,
  ): EntityAuditEntry {
    return {
      ...meta,
      userEmail: ctx.user.email,
      event,
      tenantId: ctx.tenantId,
      userId: ctx.user.userId,
      entityCode: ctx.entity.code,
      recordId,
      before,
      after,
      requestId: ctx.requestId,
      at,
    };
  }

  /** The write's transaction on the entity's database (D3), with DB constraint errors translated. */
  async withTransaction<T>(ctx: RecordContext, work: (tx: WriteTx) => Promise<T>): Promise<T> {
    const ds = this.repository.dataSourceFor(ctx.entity, ctx.tenantId);
    try {
      return await this.repository.transaction(ds, work);
    } catch (err) {
      throw translateDbError(err, ctx.entity);
    }
  }

  async afterCommit(
    ctx: RecordContext,
    entry: EntityAuditEntry,
    changed: Array<{ entity: EntityInfo; ids: number[] }>,
    eventType?: (typeof EVENT_TYPE)[keyof typeof EVENT_TYPE] | 'created',
  ): Promise<void> {
    if (auditWanted(ctx.policy.audit, entry.event)) this.audit.log(entry);
    // D37's event type: entity.created → created, and so on (cascaded rows are deleted too); an
    // undelete announces its rows as created (they are back in every list).
    const type = eventType ?? EVENT_TYPE[entry.event];
    for (const x of changed) await this.caches.invalidate(ctx.tenantId, x.entity.code, x.ids, type);
  }

  /**
   * After a bulk write's commit (D51): every row's structured audit line, then one invalidation per
   * entity touched — its list keys dropped once and its collection events published as one batch.
   */
  async afterBulkCommit(
    ctx: RecordContext,
    entries: AuditLine[],
    changed: Array<{ entity: EntityInfo; ids: number[] }>,
    event: EntityAuditEntry['event'],
  ): Promise<void> {
    for (const entry of entries) if (auditWanted(ctx.policy.audit, entry.event)) this.audit.log(entry);
    const byEntity = new Map<string, number[]>();
    for (const x of changed) {
      const ids = byEntity.get(x.entity.code) ?? [];
      for (const id of x.ids) ids.push(id);
      byEntity.set(x.entity.code, ids);
    }
    // A whole imported file's ids go out in slices: no single burst of events as large as the file.
    for (const [code, ids] of byEntity)
      for (let i = 0; i < ids.length; i += INVALIDATION_SLICE)
        await this.caches.invalidate(
          ctx.tenantId,
          code,
          ids.slice(i, i + INVALIDATION_SLICE),
          EVENT_TYPE[event],
        );
  }

  /**
   * D54: the write's event for the outbox, committed with the write (WriteTx.emit). `record` is the
   * row as stored (hidden fields are never in a snapshot); `changes` the fields the write set.
   */
  emit(
    tx: WriteTx,
    ctx: RecordContext,
    entity: EntityInfo,
    action: EventAction,
    recordId: number,
    changes: string[],
    record: Row | null,
    at: number,
  ): void {
    tx.emit({
      tenantId: ctx.tenantId,
      action,
      entityCode: entity.code,
      recordId,
      occurredAt: at,
      actor: { userId: ctx.user.userId, email: ctx.user.email },
      requestId: ctx.requestId,
      changes: [...new Set(changes)],
      record,
    });
  }

  /** The audit row, in the transaction, when the profile's flags ask for it. */
  /** The change's audit row (D29), when the profile asks for it: held by `tx` until its commit. */
  recordAudit(ctx: RecordContext, tx: WriteTx, entry: EntityAuditEntry): void {
    if (auditWanted(ctx.policy.audit, entry.event)) this.audit.record(tx, entry);
  }
}
