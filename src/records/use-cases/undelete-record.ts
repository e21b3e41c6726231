import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { AuthorizationError, ConflictError, NotFoundError } from '../../common/errors/app-error';
import { toDbTimestamp, fromDbTimestamp } from '../../database/dialect/timestamps';
import { assertCanPerform, canPerform } from '../../profile/access/can-perform';
import { ProfileLoaderService } from '../../profile/profile-loader.service';
import { RegistryService } from '../../registry/registry.service';
import type { EntityInfo, FieldDef } from '../../registry/registry.types';
import { valueLockName } from '../../database/dialect/value-lock';
import type { EntityAuditEntry } from '../audit.service';
import { HistoryRepository } from '../history/history.repository';
import type { RecordContext } from '../record-context';
import type { WriteTx } from '../write-tx';
import type { Row } from '../records-read.repository';
import { tenantScope, writeScope, type ScopeRule } from '../scope';
import { fromDb, toDb } from '../values';
import { RecordHistory } from './record-history';
import { RecordWriteSupport } from './write-support';
import { parseJsonObject, snapshotFields, uniqueKey, versionAfter } from './write-values';

/** The unique fields a row holds a value in. */
function uniqueFieldsSet(entity: EntityInfo, fields: Row): FieldDef[] {
  return entity.fields.filter((f) => f.unique && fields[f.name] !== null && fields[f.name] !== undefined);
}

export interface UndeleteResult {
  /** The record as a read shows it now, with its new lastModified. */
  record: Row;
  /** Every row brought back: the record first, then what its cascade had deleted with it. */
  undeleted: Array<{ entity: string; id: number }>;
}

interface Member {
  entity: EntityInfo;
  id: number;
  rule: ScopeRule;
}

/**
 * D56's undelete: a soft-deleted record and the rows its cascade deleted in the same delete (the
 * entries sharing its operation id) come back in one transaction, each with an `entity.restored`
 * audit entry. It needs delete permission on every entity it touches (the cascade's rule, D25); a
 * row whose unique value a live row has taken since refuses the whole undelete (409
 * `duplicate_value`, naming every clash). Rows of the cascade that are live again are left alone.
 */
@Injectable()
export class UndeleteRecord {
  constructor(
    private readonly support: RecordWriteSupport,
    private readonly history: RecordHistory,
    private readonly audits: HistoryRepository,
    private readonly registry: RegistryService,
    private readonly profiles: ProfileLoaderService,
  ) {}

  async execute(ctx: RecordContext, id: number): Promise<UndeleteResult> {
    assertCanPerform('delete', ctx);
    const { entity, policy } = ctx;
    const s = this.support;
    const { deleted } = await this.history.assertVisible(ctx, id);
    if (!deleted) throw new ConflictError(`${entity.code} ${id} is not deleted`, null, 'illegal_state');
    const fields = snapshotFields(entity);
    const operationId = randomUUID();

    const members = await this.membersOf(ctx, id);
    // The unique values to bring back, read before the transaction so that their locks can be its
    // first statement (every read after them then sees a concurrent writer's committed row).
    const lockNames = await this.uniqueLockNames(ctx, members);

    const { entry, record, token, undeleted } = await s.withTransaction(ctx, async (tx) => {
      await s.repository.lockValues(tx, lockNames);
      // The rows still deleted, their unique values checked against live rows.
      const rows: Array<Member & { fields: Row; auditRaw: unknown; lastModifiedRaw: unknown }> = [];
      for (const m of members) {
        const loaded = await s.repository.load(tx.data, m.entity, m.rule, snapshotFields(m.entity), m.id);
        if (!loaded) {
          if (m.entity === entity && m.id === id) throw new NotFoundError(`${entity.code} ${id} not found`);
          continue;
        }
        rows.push({ ...m, ...loaded });
      }
      const clashes: Array<{ entity: string; id: number; field: string }> = [];
      for (const row of rows) {
        for (const field of uniqueFieldsSet(row.entity, row.fields)) {
          const stored = row.fields[field.name];
          const value = field.type === 'email' && typeof stored === 'string' ? stored.toLowerCase() : stored;
          if (await s.repository.existsWithValue(tx.data, row.entity, ctx.tenantId, field, value, row.id))
            clashes.push({ entity: row.entity.code, id: row.id, field: field.name });
        }
      }
      if (clashes.length > 0)
        throw new ConflictError(
          `${entity.code} ${id} cannot be undeleted: live records hold its unique values`,
          { clashes },
          'duplicate_value',
        );
      // D25: a row comes back only if what it references is live (or comes back with it).
      const orphans = await this.missingReferences(tx, ctx, rows);
      if (orphans.length > 0)
        throw new ConflictError(
          `${entity.code} ${id} cannot be undeleted: it references records that are deleted`,
          { missingReferences: orphans },
          'illegal_state',
        );
      let parentEntry: EntityAuditEntry | undefined;
      let parentRecord: Row = {};
      let at = Date.now();
      for (const row of rows) {
        const storedMs = fromDbTimestamp(row.lastModifiedRaw, tx.driverType);
        at = Math.max(at, (storedMs ?? 0) + 1);
      }
      for (const row of rows) {
        const set = this.undeleteSet(row.entity, row.auditRaw, ctx.user.email, at);
        const affected = await s.repository.update(tx.data, row.entity, row.rule, row.id, set);
        if (affected !== 1) throw s.stale(row.entity, row.id, null);
        const after = s.typed(snapshotFields(row.entity), row.fields);
        const auditEntry = {
          ...s.entry(ctx, 'entity.restored', row.id, null, after, at, {
            version: versionAfter(row.auditRaw),
            changed: [],
            operationId,
          }),
          entityCode: row.entity.code,
        };
        s.recordAudit(ctx, tx, auditEntry);
        // D54: an undeleted row is announced as restored, with the record as it comes back.
        s.emit(tx, ctx, row.entity, 'restored', row.id, [], after, at);
        if (row.entity === entity && row.id === id) {
          parentEntry = auditEntry;
          parentRecord = s.typed(fields, row.fields);
        }
      }
      if (!parentEntry) throw new NotFoundError(`${entity.code} ${id} not found`);
      return {
        entry: parentEntry,
        record: parentRecord,
        token: new Date(at).toISOString(),
        undeleted: rows.map((r) => ({ entity: r.entity, id: r.id })),
      };
    });
    const byEntity = new Map<EntityInfo, number[]>();
    for (const u of undeleted) byEntity.set(u.entity, [...(byEntity.get(u.entity) ?? []), u.id]);
    await s.afterCommit(
      ctx,
      entry,
      [...byEntity].map(([e, ids]) => ({ entity: e, ids })),
      'created',
    );
    return {
      record: s.present(entity, policy, id, record, token),
      undeleted: undeleted.map((u) => ({ entity: u.entity.code, id: u.id })),
    };
  }

  /** The record, then the rows its last delete's cascade deleted (the entries of that operation). */
  private async membersOf(ctx: RecordContext, id: number): Promise<Member[]> {
    const { entity, policy } = ctx;
    const members: Member[] = [{ entity, id, rule: { ...writeScope(ctx, entity, policy), deleted: 'only' } }];
    const last = await this.audits.lastDelete(ctx.tenantId, entity.code, id);
    if (!last?.operationId) return members;
    for (const e of await this.audits.deletesOf(ctx.tenantId, last.operationId)) {
      if (e.entityCode === entity.code && e.recordId === String(id)) continue;
      const dependent = await this.registry.resolve(ctx.tenantId, e.entityCode);
      if (!dependent) continue;
      await this.assertMayDelete(ctx, dependent);
      members.push({
        entity: dependent,
        id: Number(e.recordId),
        rule: { ...tenantScope(ctx.tenantId), deleted: 'only' },
      });
    }
    return members;
  }

  /** The lock names (value-lock.ts) of the unique values the members hold now. */
  private async uniqueLockNames(ctx: RecordContext, members: Member[]): Promise<string[]> {
    const names: string[] = [];
    for (const m of members) {
      const ds = this.support.repository.dataSourceFor(m.entity, ctx.tenantId);
      const qr = ds.createQueryRunner();
      try {
        const row = await this.support.repository.load(qr, m.entity, m.rule, snapshotFields(m.entity), m.id);
        if (!row) continue;
        for (const field of uniqueFieldsSet(m.entity, row.fields))
          names.push(
            valueLockName({
              table: m.entity.table,
              tenantId: ctx.tenantId,
              column: field.column,
              value: uniqueKey(field, toDb(field, fromDb(field, row.fields[field.name]))),
            }),
          );
      } finally {
        await qr.release();
      }
    }
    return names;
  }

  /**
   * The references of the rows to bring back whose target is neither live nor among those rows.
   * A live target is locked as a create locks the parent it references (D25), so a concurrent delete
   * of it waits for this undelete and then counts the rows it brought back.
   */
  private async missingReferences(
    tx: WriteTx,
    ctx: RecordContext,
    rows: Array<Member & { fields: Row }>,
  ): Promise<Array<{ entity: string; id: number; field: string; references: string }>> {
    const s = this.support;
    const back = new Set(rows.map((r) => `${r.entity.code}:${r.id}`));
    const out: Array<{ entity: string; id: number; field: string; references: string }> = [];
    for (const row of rows) {
      for (const field of row.entity.fields) {
        const value = row.fields[field.name];
        if (!field.references || value === null || value === undefined) continue;
        const target = await this.registry.resolve(ctx.tenantId, field.references.entity);
        const targetField = target?.fields.find((f) => f.name === field.references?.field);
        if (!target || !targetField) continue;
        const isKey = targetField.column === target.primaryKeyColumn;
        if (isKey && back.has(`${target.code}:${Number(value)}`)) continue;
        const found = await s.onRunnerOf(tx, target, ctx.tenantId, (qr) =>
          s.repository.existsWithValue(
            qr,
            target,
            ctx.tenantId,
            targetField,
            value,
            undefined,
            tx.owns(qr) ? 'referenced-parent' : undefined,
          ),
        );
        if (!found)
          out.push({ entity: row.entity.code, id: row.id, field: field.name, references: target.code });
      }
    }
    return out;
  }

  /** is_deleted back to 0; who undeleted it, and when, in the audit data; a new version. */
  private undeleteSet(entity: EntityInfo, auditRaw: unknown, email: string, at: number): Row {
    const audit = parseJsonObject(auditRaw);
    audit.version = versionAfter(auditRaw);
    delete audit.deleted_by;
    delete audit.deleted_at;
    audit.restored_by = email;
    audit.restored_at = new Date(at).toISOString();
    return {
      [entity.columns.isDeleted]: 0,
      [entity.columns.auditData]: JSON.stringify(audit),
      [entity.columns.lastModified]: toDbTimestamp(at),
    };
  }

  /** Bringing a cascade back is deleting's reverse: the same decision on every dependent entity. */
  private async assertMayDelete(ctx: RecordContext, dependent: EntityInfo): Promise<void> {
    const loaded = await this.profiles.loadProfile({ entityCode: dependent.code, tenantId: ctx.tenantId });
    if (!loaded)
      throw new AuthorizationError(
        `${dependent.code} has no profile; an undelete cannot restore its records`,
      );
    const decision = canPerform('delete', { entity: dependent, policy: loaded.policy, user: ctx.user });
    if (!decision.allowed)
      throw new AuthorizationError(`${decision.reason} to undelete ${dependent.code} records`);
  }
}
