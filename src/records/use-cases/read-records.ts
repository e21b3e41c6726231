import { Injectable } from '@nestjs/common';
import { assertCanPerform } from '../../profile/access/can-perform';
import { LRUCache } from 'lru-cache';
import { createHash } from 'node:crypto';
import { CacheService } from '../../cache/cache.service';
import { CACHE_TTL } from '../../cache/cache-keys';
import { readCommitted, readMark } from '../../database/dialect/sqlite-transactions';
import { NotFoundError } from '../../common/errors/app-error';
import { isRecordId } from '../values';
import { SerializedJson } from '../../common/serialized-json';
import { rowFilterVariables } from '../../profile/row-filter';
import { presentRecord, queryPermissions, readFields } from '../presenter';
import { positionOf } from '../query/ordering';
import type { KeysetPosition, QueryPermissions, RecordQuery } from '../query/record-query';
import type { RecordContext } from '../record-context';
import { RecordsReadRepository, Row } from '../records-read.repository';

export interface ListResult {
  records: Row[];
  total: number;
  limit: number;
  skip: number;
  meta: { entityCode: string; retrievedAt: string };
}

/** Read one record (spec §4.3 read rules): in the caller's read scope, projected and masked. */
@Injectable()
export class ReadRecord {
  constructor(private readonly repository: RecordsReadRepository) {}

  async execute(ctx: RecordContext, id: number): Promise<Row> {
    assertCanPerform('read', ctx);
    if (!isRecordId(id)) throw new NotFoundError(`${ctx.entity.code} ${id} not found`);
    const fields = readFields(ctx.entity, ctx.policy);
    const row = await this.repository.findById(ctx, fields, id);
    if (!row) throw new NotFoundError(`${ctx.entity.code} ${id} not found`);
    return presentRecord(ctx.entity, ctx.policy, fields, row);
  }
}

type OffsetRecordQuery = RecordQuery & { page: { kind: 'offset' } };

/** A list page's cache key and the key of the total of its query (ListRecords.keysOf). */
interface ListKeys {
  page: string;
  total: string;
}

/** Who a list is read for, as far as it decides the rows (D27's key): profile, registry row, @user. */
function whoOf(ctx: RecordContext): { profile: unknown; registry: unknown; user: unknown } {
  const vars = ctx.policy.rowFilter ? rowFilterVariables(ctx.policy.rowFilter) : { userAttrs: [] };
  return {
    profile: ctx.profileId,
    registry: ctx.entity.registryId,
    user: vars.userAttrs.length > 0 ? ctx.user.userId : null,
  };
}

/** A kept total as a number; anything else (a miss, a text that is not a count) is unknown. */
function knownTotal(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** Query texts whose list-key hashes are kept (each a few hundred bytes at most). */
const MAX_REMEMBERED_HASHES = 2000;

/** List records with offset pages and a total (spec §4.3 style 2, D27's cache). */
@Injectable()
export class ListRecords {
  constructor(
    private readonly repository: RecordsReadRepository,
    private readonly cache: CacheService,
  ) {}

  /**
   * D27: results are cached for 300 s under `{prefix}:list:{tenantId}:{entityCode}:{hash}`. The
   * tenant is part of the key by construction; the hash covers the query, the profile and registry
   * rows and, when the row filter uses @user variables, the user, so one user's filtered view is
   * never served to another. Writes drop the tenant's keys of the entity.
   */
  async execute(ctx: RecordContext, query: OffsetRecordQuery): Promise<ListResult> {
    assertCanPerform('read', ctx);
    const keys = this.keysOf(ctx, query);
    const [cached, total] = await this.cache.getManyText([keys.page, keys.total]);
    if (cached !== undefined) return JSON.parse(cached) as ListResult;
    const ds = this.repository.dataSourceFor(ctx.entity, ctx.tenantId);
    const mark = readMark(ds);
    const result = await this.load(ctx, query, knownTotal(total));
    if (readCommitted(ds, mark))
      await this.store(keys, JSON.stringify(result), total === undefined ? result.total : undefined);
    return result;
  }

  /**
   * The same page as JSON text, for a route that answers it as it is: a cached page is sent as
   * the bytes the cache holds, never parsed and serialized again.
   */
  executeSerialized(ctx: RecordContext, query: OffsetRecordQuery): SerializedJson | Promise<SerializedJson> {
    assertCanPerform('read', ctx);
    const page = this.pageKey(ctx, query);
    // A page held in this process is answered without a promise.
    const held = this.cache.peekText(page);
    if (held !== undefined) return new SerializedJson(held);
    return this.loadSerialized(ctx, query, this.keysOf(ctx, query, page));
  }

  private async loadSerialized(
    ctx: RecordContext,
    query: OffsetRecordQuery,
    keys: ListKeys,
  ): Promise<SerializedJson> {
    const [cached, total] = await this.cache.getManyText([keys.page, keys.total]);
    if (cached !== undefined) return new SerializedJson(cached);
    const ds = this.repository.dataSourceFor(ctx.entity, ctx.tenantId);
    const mark = readMark(ds);
    const result = await this.load(ctx, query, knownTotal(total));
    const text = JSON.stringify(result);
    // Kept only when it read committed rows: a page read during an SQLite write transaction
    // may show rows that transaction then rolls back (sqlite-transactions.ts).
    if (readCommitted(ds, mark)) await this.store(keys, text, total === undefined ? result.total : undefined);
    return new SerializedJson(text);
  }

  /** Keeps a page and, when it was counted, its total (both dropped by the entity's next write). */
  private async store(keys: ListKeys, page: string, counted: number | undefined): Promise<void> {
    await Promise.all([
      this.cache.setText(keys.page, page, CACHE_TTL.entityList),
      counted === undefined
        ? undefined
        : this.cache.setText(keys.total, String(counted), CACHE_TTL.entityList),
    ]);
  }

  /**
   * The page's key and the key of its total. The total's covers what decides which rows match —
   * filters, search, profile, registry row, the user when the row filter names @user — and not the
   * sort or the page, so a grid paged or sorted through counts its rows once: every further page
   * is one statement instead of two. Both live under the entity's list keys of the tenant, which
   * every write of the entity drops (D27), so a total is never older than the pages beside it.
   */
  private keysOf(ctx: RecordContext, query: OffsetRecordQuery, page = this.pageKey(ctx, query)): ListKeys {
    const matching = { filters: query.filters, search: query.search ?? null };
    const hash = this.hashOf(JSON.stringify({ ...matching, ...whoOf(ctx) }));
    return { page, total: this.cache.keys.entityList(ctx.tenantId, ctx.entity.code, `total-${hash}`) };
  }

  /** The page's key alone: all a cached page needs (its total's key only matters on a miss). */
  private pageKey(ctx: RecordContext, query: OffsetRecordQuery): string {
    const hash = this.hashOf(JSON.stringify({ query, ...whoOf(ctx) }));
    return this.cache.keys.entityList(ctx.tenantId, ctx.entity.code, hash);
  }

  /** The same pages are asked for again and again: their hashes are remembered (bounded). */
  private hashOf(text: string): string {
    let hash = this.hashes.get(text);
    if (hash === undefined) {
      hash = createHash('sha256').update(text).digest('hex').slice(0, 32);
      this.hashes.set(text, hash);
    }
    return hash;
  }

  private readonly hashes = new LRUCache<string, string>({ max: MAX_REMEMBERED_HASHES });

  private async load(ctx: RecordContext, query: OffsetRecordQuery, total?: number): Promise<ListResult> {
    const fields = readFields(ctx.entity, ctx.policy);
    const page = await this.repository.page(
      ctx,
      fields,
      queryPermissions(ctx.entity, ctx.policy),
      query,
      total === undefined,
    );
    return {
      records: page.rows.map((r) => presentRecord(ctx.entity, ctx.policy, fields, r)),
      total: total ?? page.total ?? 0,
      limit: query.page.limit,
      skip: query.page.skip,
      meta: { entityCode: ctx.entity.code, retrievedAt: new Date().toISOString() },
    };
  }
}

/** A keyset page: rows after a position, and the position of its last row when more may follow. */
export interface KeysetPage {
  records: Row[];
  next: KeysetPosition | null;
}

/**
 * Keyset pages and row streams on (sort keys, primary key) (D31, D48): no row repeated or skipped
 * when rows are inserted or deleted between pages. Dataviews and export jobs read through here.
 */
@Injectable()
export class PageRecords {
  constructor(private readonly repository: RecordsReadRepository) {}

  async page(
    ctx: RecordContext,
    query: RecordQuery & { page: { kind: 'keyset' } },
    permissions: QueryPermissions = queryPermissions(ctx.entity, ctx.policy),
  ): Promise<KeysetPage> {
    assertCanPerform('read', ctx);
    const fields = readFields(ctx.entity, ctx.policy);
    const page = await this.repository.page(ctx, fields, permissions, query, false);
    const records = page.rows.map((r) => presentRecord(ctx.entity, ctx.policy, fields, r));
    const last = page.rows[page.rows.length - 1];
    const next =
      last && page.rows.length === query.page.limit
        ? positionOf(page.keys, records[records.length - 1], last.id)
        : null;
    return { records, next };
  }

  /** Every matching record in batches of `batchSize`, each batch one keyset page. */
  async *stream(
    ctx: RecordContext,
    query: Omit<RecordQuery, 'page'>,
    batchSize: number,
    permissions?: QueryPermissions,
  ): AsyncGenerator<Row[]> {
    let after: KeysetPosition | undefined;
    for (;;) {
      const { records, next } = await this.page(
        ctx,
        { ...query, page: { kind: 'keyset', limit: batchSize, after } },
        permissions,
      );
      if (records.length > 0) yield records;
      if (!next) return;
      after = next;
    }
  }

  async count(ctx: RecordContext, query: RecordQuery, permissions?: QueryPermissions): Promise<number> {
    assertCanPerform('read', ctx);
    return this.repository.count(ctx, permissions ?? queryPermissions(ctx.entity, ctx.policy), query);
  }
}
