import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { ReadinessService } from '../health/readiness.service';
import { JwtAuthGuard } from '../auth/jwt-auth.guard';
import { ROLES_ENTITY_CODE } from '../auth/role-change.subscriber';
import { CollectionEventsService } from '../cache/collection-events';
import { AppError } from '../common/errors/app-error';
import type { AuthUser } from '../common/request-context';
import { InjectConfig } from '../config/inject-config.decorator';
import type { AppConfig } from '../config/config.schema';
import { RateLimitedError, NotFoundError } from '../common/errors/app-error';
import { rowFilterVariables } from '../profile/row-filter';
import { OutboxRepository } from '../records/outbox/outbox.repository';
import type { OutboxEvent } from '../records/outbox/outbox.types';
import type { RecordContext } from '../records/record-context';
import type { Row } from '../records/records-read.repository';
import { ReadRecord } from '../records/use-cases/read-records';
import { LAST_MODIFIED_KEY } from '../records/concurrency-token';
import { LiveTelemetry } from './live-telemetry';

/** D55: a comment line this often keeps proxies from closing an idle stream. */
export const HEARTBEAT_MS = 15_000;
/** How often every open stream's token and user are checked again (revocation, role, deactivation). */
export const RECHECK_MS = 5_000;
/** After a users or roles write of a tenant, its streams are checked this soon (caches dropped first). */
const RECHECK_AFTER_WRITE_MS = 300;
/** The entity whose writes deactivate users or move them to another role. */
const USERS_ENTITY_CODE = 'users';
/** The guard's answers that end a stream; any other failure (an outage) leaves it open. */
const ENDING_CODES = new Set<string>(['TOKEN_REVOKED', 'TOKEN_INVALID', 'TOKEN_EXPIRED']);
/** Events read from the outbox per round trip. */
const BATCH = 500;

/** One open stream: who reads, what, and where the bytes go. */
export interface LiveStream {
  readonly ctx: RecordContext;
  /** Epoch ms the stream's token was issued (a user-wide revocation refuses earlier ones). */
  readonly issuedAtMs: number;
  /** The sequence of the last event this stream has passed (sent or not). */
  last: number;
  /**
   * A narrower view than the entity read (a dataview's columns and default filters): its key
   * (streams of one key share each shaped event) and how it turns the entity read's event into its own.
   */
  readonly view?: { key: string; narrow(shaped: Shaped): Shaped };
  write(chunk: string): void;
  close(): void;
}

export type Shaped = { event: 'created' | 'updated' | 'deleted'; data: string } | null;

/** The SSE text of one event. */
export function sseEvent(id: number, event: string, data: string): string {
  return `id: ${id}\nevent: ${event}\ndata: ${data}\n\n`;
}

/**
 * The live changes of D55. Streams register per tenant; a signal (this process's commits through
 * the outbox's onCommitted, every instance's through the collection events of D37: one Redis
 * subscription per instance, in process on the embedded default) makes the tenant's events after
 * its cursor be read once from the outbox. Each event is shaped once per distinct view (entity,
 * profile, and the user when the row filter uses @user variables) by the records read use case —
 * one read of the changed row per view, never per stream — and written to every stream of that
 * view. An idle stream holds no database connection: nothing is read until an event is signalled.
 */
@Injectable()
export class LiveChangesService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(LiveChangesService.name);
  private readonly byTenant = new Map<string, Set<LiveStream>>();
  /** Per tenant: the last sequence read from the outbox, and the chain its reads run on. */
  private readonly cursors = new Map<string, number>();
  private readonly chains = new Map<string, Promise<void>>();
  private readonly perUser = new Map<string, number>();
  private heartbeat?: NodeJS.Timeout;
  private rechecking?: NodeJS.Timeout;
  private unsubscribe: Array<() => void> = [];

  constructor(
    private readonly outbox: OutboxRepository,
    private readonly collectionEvents: CollectionEventsService,
    private readonly readRecord: ReadRecord,
    private readonly auth: JwtAuthGuard,
    private readonly telemetry: LiveTelemetry,
    @InjectConfig() private readonly config: AppConfig,
    private readonly readiness: ReadinessService,
  ) {}

  onModuleInit(): void {
    this.readiness.onShuttingDown(() => this.closeAll());
    this.telemetry.openStreams = () => this.openStreams;
    this.unsubscribe.push(
      this.outbox.onCommitted((tenantIds) => {
        for (const t of tenantIds) this.signal(t);
      }),
      this.collectionEvents.subscribe((event) => {
        this.signal(event.tenantId);
        if (event.entityCode === USERS_ENTITY_CODE || event.entityCode === ROLES_ENTITY_CODE)
          this.recheckSoon(event.tenantId);
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
   * event is sent twice or skipped between the replay and the live part.
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
          while (stream.last < cursor) {
            const events = await this.outbox.readAfter(tenant, stream.last, BATCH);
            const upTo = events.filter((e) => e.sequence <= cursor);
            if (upTo.length === 0) break;
            await this.deliver(upTo, [stream], false);
          }
          stream.last = cursor;
        }
      }
      // The shutdown began while this stream was opening (its replay reads the database).
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
      const streams = [...(this.byTenant.get(tenant) ?? [])];
      await this.deliver(events, streams);
      cursor = events[events.length - 1].sequence;
      this.cursors.set(tenant, cursor);
      if (events.length < BATCH) return;
    }
  }

  /**
   * Shapes each event once per view and writes it to the streams of that view. `live`: new events
   * (their lag is measured), not a resume's replay of old ones.
   */
  private async deliver(
    events: readonly OutboxEvent[],
    streams: readonly LiveStream[],
    live = true,
  ): Promise<void> {
    const sent = new Map<string, number>();
    for (const event of events) {
      const shapes = new Map<string, Shaped>();
      for (const stream of streams) {
        if (event.sequence <= stream.last) continue;
        stream.last = event.sequence;
        if (stream.ctx.entity.code !== event.entity) continue;
        const base = viewKey(stream.ctx);
        let shaped = shapes.get(base);
        if (shaped === undefined && !shapes.has(base)) {
          shaped = await this.shape(stream.ctx, event);
          shapes.set(base, shaped);
        }
        if (stream.view) {
          const key = `${base}|${stream.view.key}`;
          if (!shapes.has(key)) shapes.set(key, stream.view.narrow(shaped ?? null));
          shaped = shapes.get(key);
        }
        if (shaped) {
          stream.write(sseEvent(event.sequence, shaped.event, shaped.data));
          sent.set(shaped.event, (sent.get(shaped.event) ?? 0) + 1);
        }
      }
      if (sent.size > 0) {
        for (const [name, n] of sent) this.telemetry.sentTo(name, n);
        sent.clear();
        if (live) this.telemetry.delivered(event.occurredAt);
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

  private recheckSoon(tenantId: string): void {
    if (!this.byTenant.has(tenantId)) return;
    setTimeout(() => void this.recheck(tenantId), RECHECK_AFTER_WRITE_MS).unref();
  }

  /**
   * D55: a stream lives only as long as its token would still be admitted. The streams (of one
   * tenant, or all) are checked again as the guard checks a request — once per token, not per
   * stream: a revoked token (logout, a user-wide revocation), a deactivated user or a user whose
   * role (or the role's permissions) changed since the stream opened ends it; the client
   * reconnects and is answered as it is now. A failed lookup (an outage) ends nothing.
   */
  async recheck(tenantId?: string): Promise<void> {
    const byToken = new Map<string, LiveStream[]>();
    for (const [tenant, set] of this.byTenant) {
      if (tenantId !== undefined && tenant !== tenantId) continue;
      for (const s of set) {
        const key = `${tenant}:${s.ctx.user.jti}:${s.issuedAtMs}`;
        const list = byToken.get(key);
        if (list) list.push(s);
        else byToken.set(key, [s]);
      }
    }
    await Promise.all(
      [...byToken.values()].map(async (streams) => {
        const { ctx, issuedAtMs } = streams[0];
        let now: AuthUser;
        try {
          now = await this.auth.recheck(ctx.user, issuedAtMs);
        } catch (err) {
          if (err instanceof AppError && ENDING_CODES.has(err.code)) for (const s of streams) s.close();
          else
            this.logger.warn(
              { err, tenant: ctx.tenantId },
              'Live changes: a token could not be checked again',
            );
          return;
        }
        for (const s of streams) if (roleChanged(s.ctx.user, now)) s.close();
      }),
    );
  }

  private beat(): void {
    const now = Date.now() / 1000;
    for (const set of this.byTenant.values())
      for (const s of [...set]) {
        if (s.ctx.user.exp && s.ctx.user.exp <= now) s.close();
        else s.write(': heartbeat\n\n');
      }
  }
}

/** Whether the user's role, or what it grants, is not what the stream was opened with. */
export function roleChanged(then: AuthUser, now: AuthUser): boolean {
  if (then.roleId !== now.roleId) return true;
  const a = [...then.permissions].sort();
  const b = [...now.permissions].sort();
  return a.length !== b.length || a.some((p, i) => p !== b[i]);
}

/** Streams that see an event alike: same entity, profile and, for @user row filters, user. */
function viewKey(ctx: RecordContext): string {
  const vars = ctx.policy.rowFilter ? rowFilterVariables(ctx.policy.rowFilter) : { userAttrs: [] };
  return JSON.stringify([
    ctx.entity.code,
    ctx.entity.registryId,
    ctx.profileId,
    vars.userAttrs.length > 0 ? ctx.user.userId : null,
  ]);
}
