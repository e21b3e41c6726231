import { Injectable } from '@nestjs/common';
import { NotFoundError } from '../../common/errors/app-error';
import { assertCanPerform } from '../../profile/access/can-perform';
import { HistoryRepository, type AuditRow } from '../history/history.repository';
import { actionOf, presentEntry, presentRecordValues, type HistoryEntry } from '../history/history-view';
import type { RecordContext } from '../record-context';
import { RecordsReadRepository, type Row } from '../records-read.repository';
import { isRecordId } from '../values';

export interface HistoryPage {
  entries: HistoryEntry[];
  total: number;
  limit: number;
  skip: number;
}

/** A record as it was after one version (D56). */
export interface RecordAtVersion {
  version: number;
  action: HistoryEntry['action'];
  at: string;
  by: HistoryEntry['by'];
  /** Whether the record was soft-deleted as of that version. */
  deleted: boolean;
  record: Row;
}

/** The stored values of a version, unshaped (what a restore writes back). */
export interface StoredVersion {
  entry: AuditRow;
  values: Row;
  deleted: boolean;
}

/**
 * A record's history (D56): its audit entries, newest first, and the record as it was after one of
 * them. The caller's read scope and row filter decide whether the record — live or soft-deleted —
 * exists for it (404 otherwise, whatever the audit holds); every value is shaped by its profile.
 */
@Injectable()
export class RecordHistory {
  constructor(
    private readonly records: RecordsReadRepository,
    private readonly history: HistoryRepository,
  ) {}

  async list(ctx: RecordContext, id: number, page: { limit: number; skip: number }): Promise<HistoryPage> {
    await this.assertVisible(ctx, id);
    const { rows, total } = await this.history.page(ctx.tenantId, ctx.entity.code, id, page.limit, page.skip);
    return {
      entries: rows.map((r) => presentEntry(ctx.entity, ctx.policy, r)),
      total,
      limit: page.limit,
      skip: page.skip,
    };
  }

  async atVersion(ctx: RecordContext, id: number, version: number): Promise<RecordAtVersion> {
    await this.assertVisible(ctx, id);
    const stored = await this.stored(ctx, id, version);
    const entry = presentEntry(ctx.entity, ctx.policy, stored.entry);
    return {
      version: entry.version,
      action: entry.action,
      at: entry.at,
      by: entry.by,
      deleted: stored.deleted,
      record: presentRecordValues(ctx.entity, ctx.policy, stored.values),
    };
  }

  /**
   * The values of `version` as stored (for a restore; the caller has been checked). A delete entry
   * holds the record before it (a cascaded row's holds none: its last snapshot is used).
   */
  async stored(ctx: RecordContext, id: number, version: number): Promise<StoredVersion> {
    assertCanPerform('read', ctx);
    const notFound = () => new NotFoundError(`${ctx.entity.code} ${id} has no version ${version}`);
    if (!Number.isSafeInteger(version) || version < 1) throw notFound();
    const entry = await this.history.atVersion(ctx.tenantId, ctx.entity.code, id, version);
    if (!entry) throw notFound();
    const deleted = actionOf(entry.event) === 'deleted';
    let values = deleted ? entry.before : entry.after;
    if (!values) {
      const snapshot = await this.history.lastSnapshot(ctx.tenantId, ctx.entity.code, id, version);
      values = snapshot?.after ?? null;
    }
    if (!values) throw notFound();
    return { entry, values, deleted };
  }

  /** read, and the record in the caller's read scope (live or deleted). */
  async assertVisible(ctx: RecordContext, id: number): Promise<{ deleted: boolean }> {
    assertCanPerform('read', ctx);
    const found = isRecordId(id) ? await this.records.findForHistory(ctx, id) : undefined;
    if (!found) throw new NotFoundError(`${ctx.entity.code} ${id} not found`);
    return found;
  }
}
