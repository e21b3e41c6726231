import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { AuthorizationError, ConflictError, NotFoundError } from '../../common/errors/app-error';
import { isRecordId } from '../values';
import { fromDbTimestamp } from '../../database/dialect/timestamps';
import { assertCanPerform, canPerform } from '../../profile/access/can-perform';
import { ProfileLoaderService } from '../../profile/profile-loader.service';
import type { EntityInfo } from '../../registry/registry.types';
import { CascadePlanner } from '../cascade-planner';
import type { EntityAuditEntry } from '../audit.service';
import type { RecordContext } from '../record-context';
import type { WriteTx } from '../write-tx';
import { tenantScope, writeScope } from '../scope';
import { RecordWriteSupport } from './write-support';
import { snapshotFields, versionAfter } from './write-values';

export interface DeleteResult {
  success: true;
  deletedAt: string;
}

/** What a delete did inside its transaction: the rows removed (the record and its cascade). */
export interface DeleteDone {
  id: number;
  deletedAt: string;
  entry: EntityAuditEntry;
  removed: Array<{ entity: EntityInfo; ids: number[] }>;
}

/**
 * Soft-delete a record (spec §4.3 delete rules 1-7, §3.1, D25): the parent is locked before its
 * dependents are counted; restrict relations block without `cascade`; a cascade is the caller's
 * act on every dependent entity too (canPerform with that entity's profile) and runs in the same
 * transaction; every removed row gets its audit row; invalidation and events after the commit.
 */
@Injectable()
export class DeleteRecord {
  constructor(
    private readonly support: RecordWriteSupport,
    private readonly planner: CascadePlanner,
    private readonly profiles: ProfileLoaderService,
  ) {}

  async execute(ctx: RecordContext, id: number, options: { cascade: boolean }): Promise<DeleteResult> {
    this.prepare(ctx, id);
    const s = this.support;
    const done = await s.withTransaction(ctx, (tx) => this.inTransaction(ctx, tx, id, options));
    await s.afterCommit(ctx, done.entry, done.removed);
    return { success: true, deletedAt: done.deletedAt };
  }

  /** The checks before the transaction; a bulk delete (D51) runs them per row too. */
  prepare(ctx: RecordContext, id: number): void {
    assertCanPerform('delete', ctx);
    if (!isRecordId(id)) throw new NotFoundError(`${ctx.entity.code} ${id} not found`);
  }

  /** The soft delete itself (and its cascade) on the caller's transaction. */
  async inTransaction(
    ctx: RecordContext,
    tx: WriteTx,
    id: number,
    options: { cascade: boolean },
  ): Promise<DeleteDone> {
    // Asked again: this entry point may be called without prepare (a bulk row, a job).
    assertCanPerform('delete', ctx);
    const { entity, policy } = ctx;
    const s = this.support;
    const fields = snapshotFields(entity);
    const now = Date.now();
    const deletedAt = new Date(now).toISOString();
    // The parent is locked before its dependents are counted, so a concurrent child write (which
    // locks the parent it references) either finishes first and is counted, or finds it deleted.
    // On MariaDB this locking read is also the transaction's first read (its snapshot comes after).
    const scope = writeScope(ctx, entity, policy);
    const existing = await s.repository.load(tx.data, entity, scope, fields, id, 'parent-of-delete');
    if (!existing) throw new NotFoundError(`${entity.code} ${id} not found`);
    const plan = await this.planner.plan(tx, entity, [id], options.cascade, ctx.tenantId, 0);
    if (plan.blocked.size > 0) {
      throw new ConflictError(
        `${entity.code} ${id} has dependent records; delete with cascade=true`,
        {
          dependentEntities: [...plan.blocked].map(([code, count]) => ({ entity: code, count })),
        },
        'dependents_exist',
      );
    }
    for (const step of plan.cascade) await this.assertMayDelete(ctx, step.entity);
    const storedMs = fromDbTimestamp(existing.lastModifiedRaw, tx.driverType);
    const at = Math.max(now, (storedMs ?? 0) + 1);
    const affected = await s.repository.update(
      tx.data,
      entity,
      scope,
      id,
      s.softDeleteSet(entity, existing.auditRaw, ctx, at),
    );
    if (affected !== 1) throw new NotFoundError(`${entity.code} ${id} not found`);
    // D25: dependents go in the same transaction, in the tenant's own live rows.
    for (const step of plan.cascade) {
      for (const row of step.rows) {
        await s.repository.update(
          tx.data,
          step.entity,
          tenantScope(ctx.tenantId),
          row.id,
          s.softDeleteSet(step.entity, row.auditRaw, ctx, at),
        );
      }
    }
    const cascaded = plan.cascade.map((c) => ({ entity: c.entity.code, ids: c.rows.map((r) => r.id) }));
    const before = s.typed(fields, existing.fields);
    const after = { deleted_by: ctx.user.email, deleted_at: deletedAt, cascaded };
    const operationId = randomUUID();
    const auditEntry = s.entry(ctx, 'entity.deleted', id, before, after, at, {
      version: versionAfter(existing.auditRaw),
      changed: [],
      operationId,
    });
    s.recordAudit(ctx, tx, auditEntry);
    s.emit(tx, ctx, entity, 'deleted', id, [], before, at);
    for (const step of plan.cascade)
      for (const row of step.rows) s.emit(tx, ctx, step.entity, 'deleted', row.id, [], { id: row.id }, at);
    // Every cascaded row gets an audit row of its own, pointing back at the parent.
    for (const step of plan.cascade) {
      for (const row of step.rows) {
        s.recordAudit(ctx, tx, {
          ...auditEntry,
          entityCode: step.entity.code,
          recordId: row.id,
          version: versionAfter(row.auditRaw),
          before: null,
          after: {
            deleted_by: ctx.user.email,
            deleted_at: deletedAt,
            cascadedFrom: { entity: entity.code, id },
          },
        });
      }
    }
    return {
      id,
      deletedAt,
      entry: auditEntry,
      removed: [
        { entity, ids: [id] },
        ...plan.cascade.map((c) => ({ entity: c.entity, ids: c.rows.map((r) => r.id) })),
      ],
    };
  }

  /** A cascade deletes the dependents as the caller: the same access decision as a direct delete. */
  private async assertMayDelete(ctx: RecordContext, dependent: EntityInfo): Promise<void> {
    const loaded = await this.profiles.loadProfile({ entityCode: dependent.code, tenantId: ctx.tenantId });
    if (!loaded)
      throw new AuthorizationError(`${dependent.code} has no profile; a cascade cannot delete its records`);
    const decision = canPerform('delete', { entity: dependent, policy: loaded.policy, user: ctx.user });
    if (!decision.allowed) throw new AuthorizationError(`${decision.reason} to cascade to ${dependent.code}`);
  }
}
