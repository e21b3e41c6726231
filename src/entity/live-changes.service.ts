import { setImmediate as nextTurn } from 'node:timers/promises';
import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { ReadinessService } from '../health/readiness.service';
import { JwtAuthGuard } from '../auth/jwt-auth.guard';
import { ROLES_ENTITY_CODE } from '../auth/role-change.subscriber';
import { CollectionEventsService } from '../cache/collection-events';
import { ProfileCatalogService } from '../catalog/profile-catalog.service';
import { InjectConfig } from '../config/inject-config.decorator';
import type { AppConfig } from '../config/config.schema';
import { RateLimitedError, NotFoundError } from '../common/errors/app-error';
import { ProfileLoaderService } from '../profile/profile-loader.service';
import { OutboxRepository } from '../records/outbox/outbox.repository';
import type { OutboxEvent } from '../records/outbox/outbox.types';
import type { RecordContext } from '../records/record-context';
import type { Row } from '../records/records-read.repository';
import { ReadRecord } from '../records/use-cases/read-records';
import { LAST_MODIFIED_KEY } from '../records/concurrency-token';
import { LiveRecheck } from './live-recheck';
import { sseEvent, viewKey, type LiveStream, type Shaped } from './live-stream';
import { LiveTelemetry } from './live-telemetry';

export { roleChanged, sseEvent, type LiveStream, type LiveView, type Shaped } from './live-stream';

/** D55: a comment line this often keeps proxies from closing an idle stream. */
export const HEARTBEAT_MS = 15_000;
/** How often every open stream's token, user and profile are checked again. */
export const RECHECK_MS = 5_000;
/** After a users or roles write of a tenant, its streams are checked this soon (caches dropped first). */
const RECHECK_AFTER_WRITE_MS = 300;
/**
 * After a profile or registry write, every stream is checked at these delays: the profile catalog
 * reloads on the same event and drops the cached profiles first; the second check follows a reload
 * that took longer (it reads every profile).
 */
const RECHECK_AFTER_PROFILE_MS = [300, 2_000];
/** The entity whose writes deactivate users or move them to another role. */
const USERS_ENTITY_CODE = 'users';
/** Events read from the outbox per round trip (a page of a replay or of a drain). */
const BATCH = 500;
/**
 * Longest stretch a delivery keeps the event loop (ms): the embedded SQLite driver answers without
 * yielding, so a replay of thousands of events would otherwise hold the loop from its first read to
 * its last (issue 34 #5: another tenant's reads waited 667 ms).
 */
const SLICE_MS = 20;

/**
 * The live changes of D55. Streams register per tenant; a signal (this process's commits through
 * the outbox's onCommitted, every instance's through the collection events of D37: one Redis
 * subscription per instance, in process on the embedded default) makes the tenant's events after
 * its cursor be read once from the outbox. Each event is shaped once per distinct view (entity,
 * profile version, and the user when the row filter uses @user variables) by the records read use
 * case — one read of the changed row per view, never per stream — and written to every stream of
 * that view. An idle stream holds no database connection: nothing is read until an event is signalled.
 *
 * A stream whose client does not take what is written falls behind; once more than
 * SSE_MAX_BUFFER_BYTES wait in this process for it, it is dropped (issue 34 #5) and its client
 * resumes with Last-Event-ID from the outbox.
 */
@Injectable()
export class LiveChangesService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(LiveChangesService.name);
  private readonly byTenant = new Map<string, Set<LiveStream>>();
  /** Per tenant: the last sequence read from the outbox, and the chain its reads run on. */
  private readonly cursors = new Map<string, number>();
  private readonly chains = new Map<string, Promise<void>>();
  private readonly perUser = new Map<string, number>();
  private readonly rechecker: LiveRecheck;
  private heartbeat?: NodeJS.Timeout;
  private rechecking?: NodeJS.Timeout;
  private unsubscribe: Array<() => void> = [];

  constructor(
    private readonly outbox: OutboxRepository,
    private readonly collectionEvents: CollectionEventsService,
    private readonly readRecord: ReadRecord,
    auth: JwtAuthGuard,
    profiles: ProfileLoaderService,
    private readonly catalog: ProfileCatalogService,
    private readonly telemetry: LiveTelemetry,
    @InjectConfig() private readonly config: AppConfig,
    private readonly readiness: ReadinessService,
  ) {
    this.rechecker = new LiveRecheck(auth, profiles, this.logger);
  }

  onModuleInit(): void {
    this.readiness.onShuttingDown(() => this.closeAll());
    this.telemetry.openStreams = () => this.openStreams;
    this.telemetry.bufferedBytes = () => this.bufferedBytes;
    this.unsubscribe.push(
      this.outbox.onCommitted((tenantIds) => {
        for (const t of tenantIds) this.signal(t);
      }),
      this.collectionEvents.subscribe((event) => {
        this.signal(event.tenantId);
        if (event.entityCode === USERS_ENTITY_CODE || event.entityCode === ROLES_ENTITY_CODE)
          this.recheckSoon(event.tenantId, [RECHECK_AFTER_WRITE_MS]);
        // A system-wide profile serves every tenant: all streams are checked.
        else if (this.catalog.isSourceEntity(event.entityCode))
          this.recheckSoon(undefined, RECHECK_AFTER_PROFILE_MS);
      }),
    );
    this.heartbeat = setInterval(() => this.beat(), HEARTBEAT_MS);
    this.heartbeat.unref();
    this.rechecking = setInterval(() => void this.recheck(), RECHECK_MS);
    this.rechecking.unref();
  }

  /**
   * Streams end when the shutdown begins (before the HTTP drain, which would wait for them as
   * answers under way) and, at the latest, when the modules close — before the HTTP server does,
   * which waits for its open connections. Clients reconnect elsewhere with Last-Event-ID.
   */
  onModuleDestroy(): void {
    this.closeAll();
  }

  /** Set when the shutdown began: a stream still opening is ended instead of registered. */
  private closed = false;

  private closeAll(): void {
    this.closed = true;
    for (const u of this.unsubscribe) u();
    this.unsubscribe.length = 0;
    if (this.heartbeat) clearInterval(this.heartbeat);
    if (this.rechecking) clearInterval(this.rechecking);
    for (const set of this.byTenant.values()) for (const s of set) s.close();
    this.byTenant.clear();
  }

  /** Streams open on this instance. */
  get openStreams(): number {
    let n = 0;
    for (const set of this.byTenant.values()) n += set.size;
    return n;
  }

  /** Bytes written to the open streams of this instance that their clients have not taken yet. */
  get bufferedBytes(): number {
    let n = 0;
    for (const set of this.byTenant.values()) for (const s of set) n += s.backlog();
    return n;
  }

  /** Refuses (429) a stream beyond SSE_MAX_STREAMS_PER_USER; else counts it until `release`. */
  reserve(ctx: RecordContext): () => void {
    const key = `${ctx.tenantId}:${ctx.user.userId}`;
    const n = this.perUser.get(key) ?? 0;
    if (n >= this.config.events.maxStreamsPerUser)
      throw new RateLimitedError('Too many open change streams for this user', HEARTBEAT_MS);
    this.perUser.set(key, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.perUser.get(key) ?? 1) - 1;
      if (left <= 0) this.perUser.delete(key);
      else this.perUser.set(key, left);
    };
  }

  /**
   * Starts a stream: with `lastEventId`, the retained events after it first (or one `reset` when
   * it is older than the outbox keeps); then every new event. Runs on the tenant's chain, so no
   * event is sent twice or skipped between the replay and the live part. The replay reads the
   * outbox in pages by sequence (keyset) and gives the event loop back between and within pages; a
   * client that does not take it is dropped as a live one is.
   */
  open(stream: LiveStream, lastEventId: number | undefined): Promise<void> {
    const tenant = stream.ctx.tenantId;
    return this.enqueue(tenant, async () => {
      const cursor = await this.cursorOf(tenant);
      if (lastEventId === undefined || lastEventId >= cursor) {
        stream.last = Math.max(cursor, lastEventId ?? 0);
      } else {
        const first = await this.outbox.firstSequence(tenant);
        if (first === null || lastEventId < first - 1) {
          stream.write(sseEvent(cursor, 'reset', '{}'));
          this.telemetry.sentTo('reset', 1);
          stream.last = cursor;
        } else {
          stream.last = lastEventId;
          while (!stream.closed && stream.last < cursor) {
            const events = await this.outbox.readAfter(tenant, stream.last, BATCH);
            const upTo = events.filter((e) => e.sequence <= cursor);
            if (upTo.length === 0) break;
            await this.deliver(upTo, [stream], false);
          }
          stream.last = cursor;
        }
      }
      // Dropped or gone while its replay ran, or the shutdown began meanwhile.
      if (stream.closed) return;
      if (this.closed) {
        stream.close();
        return;
      }
      let set = this.byTenant.get(tenant);
      if (!set) this.byTenant.set(tenant, (set = new Set()));
      set.add(stream);
    });
  }

  close(stream: LiveStream): void {
    const tenant = stream.ctx.tenantId;
    const set = this.byTenant.get(tenant);
    if (!set) return;
    set.delete(stream);
    if (set.size === 0) {
      this.byTenant.delete(tenant);
      this.cursors.delete(tenant);
    }
  }

  /** A tenant's events may have committed: read them once if anyone of the tenant listens. */
  signal(tenantId: string): void {
    if (!this.byTenant.has(tenantId)) return;
    void this.enqueue(tenantId, () => this.drain(tenantId));
  }

  private enqueue(tenant: string, task: () => Promise<void>): Promise<void> {
    const next = (this.chains.get(tenant) ?? Promise.resolve()).then(task).catch((err: unknown) => {
      this.logger.warn({ err, tenant }, 'Live changes: a read of the outbox failed');
    });
    this.chains.set(tenant, next);
    void next.then(() => {
      if (this.chains.get(tenant) === next) this.chains.delete(tenant);
    });
    return next;
  }

  private async cursorOf(tenant: string): Promise<number> {
    let cursor = this.cursors.get(tenant);
    if (cursor === undefined) {
      cursor = await this.outbox.lastSequence(tenant);
      this.cursors.set(tenant, cursor);
    }
    return cursor;
  }

  private async drain(tenant: string): Promise<void> {
    if (!this.byTenant.has(tenant)) return;
    let cursor = await this.cursorOf(tenant);
    for (;;) {
      const events = await this.outbox.readAfter(tenant, cursor, BATCH);
      if (events.length === 0) return;
      await this.deliver(events, [...(this.byTenant.get(tenant) ?? [])]);
      cursor = events[events.length - 1].sequence;
      this.cursors.set(tenant, cursor);
      if (events.length < BATCH) return;
    }
  }

  /**
   * Whether the stream's client takes what it is sent: its backlog is what is still queued of the
   * writes of earlier turns of the event loop (the socket, so the client, did not take it). Beyond
   * SSE_MAX_BUFFER_BYTES the stream is dropped at once (what is queued goes with it, freeing the
   * memory) and its client resumes with Last-Event-ID.
   */
  private keepsUp(stream: LiveStream): boolean {
    const queued = stream.backlog();
    const max = this.config.events.maxBufferBytes;
    if (queued <= max) return true;
    this.logger.warn(
      {
        tenant: stream.ctx.tenantId,
        userId: stream.ctx.user.userId,
        queuedBytes: queued,
        maxBytes: max,
        last: stream.last,
      },
      'Live changes: a stream fell too far behind and was dropped (its client resumes with Last-Event-ID)',
    );
    this.telemetry.dropped();
    stream.close(true);
    return false;
  }

  /**
   * Shapes each event once per view and writes it to the streams of that view. `live`: new events
   * (their lag is measured), not a resume's replay of old ones. Gives the event loop back every
   * SLICE_MS, so shaping many events never holds it, and drops the streams left behind (keepsUp).
   */
  private async deliver(
    events: readonly OutboxEvent[],
    streams: readonly LiveStream[],
    live = true,
  ): Promise<void> {
    const sent = new Map<string, number>();
    // The streams whose clients did not take what was written before are dropped here, and after
    // every slice.
    let active = streams.filter((s) => !s.closed && this.keepsUp(s));
    let sliceStart = performance.now();
    // Bytes written to one stream since the last turn (at most: a stream of every view sent).
    let burst = 0;
    for (const event of events) {
      const shapes = new Map<string, Shaped>();
      let largest = 0;
      for (const stream of active) {
        if (event.sequence <= stream.last) continue;
        stream.last = event.sequence;
        if (stream.ctx.entity.code !== event.entity) continue;
        const base = viewKey(stream.ctx);
        let shaped = shapes.get(base);
        if (shaped === undefined && !shapes.has(base)) {
          shaped = await this.shape(stream.ctx, event);
          shapes.set(base, shaped);
        }
        const view = stream.view;
        if (view) {
          const key = `${base}|${view.key}`;
          if (!shapes.has(key)) shapes.set(key, view.narrow(shaped ?? null));
          shaped = shapes.get(key);
        }
        if (shaped) {
          const text = sseEvent(event.sequence, shaped.event, shaped.data);
          stream.write(text);
          largest = Math.max(largest, text.length);
          sent.set(shaped.event, (sent.get(shaped.event) ?? 0) + 1);
        }
      }
      if (sent.size > 0) {
        for (const [name, n] of sent) this.telemetry.sentTo(name, n);
        sent.clear();
        if (live) this.telemetry.delivered(event.occurredAt);
      }
      burst += largest;
      // A turn also every half bound written: the sockets take it before a reader is judged.
      if (performance.now() - sliceStart > SLICE_MS || burst > this.config.events.maxBufferBytes / 2) {
        await nextTurn();
        active = active.filter((s) => !s.closed && this.keepsUp(s));
        sliceStart = performance.now();
        burst = 0;
      }
    }
  }

  /**
   * The event as the view's read shows it now: the row read through the records read use case
   * (projection, masking, row filter). A created row outside the view is not sent; an updated or
   * restored one outside it is sent as `deleted` (it may have left the view); a deletion is sent
   * with the id only.
   */
  private async shape(ctx: RecordContext, event: OutboxEvent): Promise<Shaped> {
    const id = event.recordId;
    if (event.type.endsWith('.deleted'))
      return { event: 'deleted', data: JSON.stringify({ id, lastModified: null, row: null }) };
    let row: Row | undefined;
    try {
      row = await this.readRecord.execute(ctx, id);
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
    }
    const created = event.type.endsWith('.created');
    if (!row) {
      return created
        ? null
        : { event: 'deleted', data: JSON.stringify({ id, lastModified: null, row: null }) };
    }
    const lastModified = (row[LAST_MODIFIED_KEY] as string | null | undefined) ?? null;
    return { event: created ? 'created' : 'updated', data: JSON.stringify({ id, lastModified, row }) };
  }

  private recheckSoon(tenantId: string | undefined, delays: readonly number[]): void {
    if (tenantId !== undefined ? !this.byTenant.has(tenantId) : this.byTenant.size === 0) return;
    for (const ms of delays) setTimeout(() => void this.recheck(tenantId), ms).unref();
  }

  /**
   * D55: a stream lives only as long as its token would still be admitted, and reads with the
   * profile as it is now (LiveRecheck). The streams of one tenant, or all, are checked again as
   * the guard checks a request — once per token and once per tenant's entity, not per stream.
   */
  async recheck(tenantId?: string): Promise<void> {
    const streams: LiveStream[] = [];
    for (const [tenant, set] of this.byTenant)
      if (tenantId === undefined || tenant === tenantId) streams.push(...set);
    try {
      await this.rechecker.run(streams);
    } catch (err) {
      this.logger.warn({ err, tenant: tenantId }, 'Live changes: open streams could not be checked again');
    }
  }

  private beat(): void {
    const now = Date.now() / 1000;
    for (const set of this.byTenant.values())
      for (const s of [...set]) {
        if (s.ctx.user.exp && s.ctx.user.exp <= now) s.close();
        else if (this.keepsUp(s)) s.write(': heartbeat\n\n');
      }
  }
}
