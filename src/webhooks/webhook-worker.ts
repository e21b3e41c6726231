import {
  BeforeApplicationShutdown,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnModuleDestroy,
} from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { QueryRunner } from 'typeorm';
import { errorMessage } from '../common/errors/error-message';
import type { AppConfig } from '../config/config.schema';
import { InjectConfig } from '../config/inject-config.decorator';
import { decryptConnectionString } from '../database/connections/connection-string.crypto';
import { DatabaseService } from '../database/database.service';
import { ReadinessService } from '../health/readiness.service';
import { OutboxRepository } from '../records/outbox/outbox.repository';
import { RecordsWriteRepository } from '../records/records-write.repository';
import { DeliveriesRepository, type AttemptOutcome, type Delivery, type NewDelivery } from './deliveries.repository';
import { matchesAny } from './event-patterns';
import { signatureHeaders } from './signature';
import { sendWebhook } from './webhook-sender';
import { WebhookPayloads } from './webhook-payloads';
import { WebhookTelemetry } from './webhook-telemetry';
import type { WebhookRow } from './webhook.types';
import { WebhooksRepository } from './webhooks.repository';
import { storedSecretKeyRing } from '../config/key-ring';
import { retryDelayMs } from './retry-delay';

const MIN_IDLE_MS = 20;

interface PendingSuccess {
  d: Delivery;
  owner: string;
  outcome: AttemptOutcome;
  webhookId: number;
  settle: { resolve: (committed: boolean) => void; reject: (err: unknown) => void };
}
/** Events one relay pass reads per webhook. */
const RELAY_BATCH = 500;

/**
 * The webhook worker of this instance (D54), on every instance with WEBHOOK_WORKER=on:
 *
 * - the relay: for each active webhook whose relay lease it gets, reads the tenant's outbox after
 *   the webhook's cursor, creates a delivery (body rendered once) for each matching event and
 *   moves the cursor, in one transaction fenced on the lease — so a crash creates each delivery
 *   exactly once;
 * - delivery: claims due deliveries with the skip-locked read and a lease longer than an attempt
 *   (D49) — only the head of each (webhook, record) line, so a record's events arrive in order —,
 *   signs and POSTs each, then DELIVERED, PENDING again after a backoff with jitter, or DEAD after
 *   WEBHOOK_MAX_ATTEMPTS. A worker that dies mid-delivery leaves the row DELIVERING; once the
 *   lease ran out any instance claims it again and sends it with the same `webhook-id`.
 *
 * A webhook failing for WEBHOOK_DISABLE_AFTER_S without a success, or answered 410 Gone, is
 * disabled (logged); its pending deliveries wait until it is enabled again.
 */
@Injectable()
export class WebhookWorker implements OnApplicationBootstrap, BeforeApplicationShutdown, OnModuleDestroy {
  private readonly logger = new Logger('Webhooks');
  readonly workerId = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private running = false;
  private readonly active = new Set<Promise<void>>();
  private idleMs = MIN_IDLE_MS;
  private wakeUp?: () => void;
  private loopDone?: Promise<void>;
  private unsubscribe?: () => void;
  private lastError = 0;
  private claims = 0;

  constructor(
    @InjectConfig() private readonly config: AppConfig,
    private readonly webhooks: WebhooksRepository,
    private readonly deliveries: DeliveriesRepository,
    private readonly outbox: OutboxRepository,
    private readonly writes: RecordsWriteRepository,
    private readonly database: DatabaseService,
    private readonly payloads: WebhookPayloads,
    private readonly telemetry: WebhookTelemetry,
    private readonly readiness: ReadinessService,
  ) {}

  /**
   * A write of the worker in a transaction of the records core's: on SQLite (one connection per
   * file) a bare statement would otherwise run inside whatever write transaction is open and share
   * its fate; there every write queues behind the single writer instead.
   */
  private tx<T>(work: (qr: QueryRunner) => Promise<T>): Promise<T> {
    return this.writes.transaction(this.database.dataSource, (t) => work(t.config), 'READ COMMITTED');
  }

  /** A claim's lease outlives one attempt (its timeout) with room to write the outcome. */
  private get leaseMs(): number {
    return Math.max(this.config.webhooks.leaseMs, this.config.webhooks.timeoutMs * 2 + 1000);
  }

  onApplicationBootstrap(): void {
    if (!this.config.webhooks.worker) {
      this.logger.log('Webhook worker off (WEBHOOK_WORKER=off): this instance delivers no webhooks');
      return;
    }
    this.running = true;
    this.unsubscribe = this.outbox.onCommitted(() => this.wake());
    this.loopDone = this.loop();
  }

  async beforeApplicationShutdown(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.unsubscribe?.();
    this.wake();
    await this.loopDone;
    // Attempts in flight finish (each is bounded by WEBHOOK_TIMEOUT_MS) or are claimed again later.
    const grace = Math.min(this.config.api.shutdownTimeoutMs / 2, this.config.webhooks.timeoutMs);
    await Promise.race([
      Promise.allSettled([...this.active]),
      new Promise((r) => setTimeout(r, grace).unref()),
    ]);
  }

  onModuleDestroy(): void {
    this.running = false;
    this.unsubscribe?.();
  }

  wake(): void {
    this.idleMs = MIN_IDLE_MS;
    const w = this.wakeUp;
    this.wakeUp = undefined;
    w?.();
  }

  private async loop(): Promise<void> {
    while (this.running) {
      let worked = 0;
      if (this.readiness.ready) {
        try {
          worked += await this.relayAll();
          worked += await this.claimAndSend();
        } catch (err) {
          this.reportError(err);
        }
      }
      if (!this.running) break;
      if (worked > 0) {
        this.idleMs = MIN_IDLE_MS;
        await new Promise((r) => setImmediate(r));
        continue;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          this.wakeUp = undefined;
          resolve();
        }, this.idleMs);
        timer.unref();
        this.wakeUp = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.idleMs = Math.min(this.config.webhooks.pollMs, this.idleMs * 2);
    }
  }

  /** One relay pass over every active webhook; the number of deliveries created. */
  async relayAll(): Promise<number> {
    let created = 0;
    // The tenants' last numbers, read once per pass: a webhook whose cursor has caught up costs no write.
    const last = new Map<string, number>();
    for (const webhook of await this.webhooks.listActive()) {
      try {
        if (!last.has(webhook.tenantId))
          last.set(webhook.tenantId, await this.outbox.lastSequence(webhook.tenantId));
        if ((last.get(webhook.tenantId) ?? 0) <= webhook.cursor) continue;
        created += await this.relay(webhook);
      } catch (err) {
        this.reportError(err);
      }
    }
    return created;
  }

  private async relay(webhook: WebhookRow): Promise<number> {
    const owner = `${this.workerId}#relay`;
    if (!(await this.tx((qr) => this.webhooks.claimRelay(webhook, owner, this.leaseMs, Date.now(), qr))))
      return 0;
    try {
      const events = await this.outbox.readAfter(webhook.tenantId, webhook.cursor, RELAY_BATCH);
      if (events.length === 0) return 0;
      const now = Date.now();
      const rows: NewDelivery[] = [];
      const memo = new Map<string, unknown>();
      for (const e of events) {
        if (!matchesAny(webhook.events, e.type)) continue;
        rows.push({
          uid: `msg_${randomUUID().replace(/-/g, '')}`,
          tenantId: webhook.tenantId,
          webhookId: webhook.id,
          eventUid: e.id,
          sequence: e.sequence,
          type: e.type,
          entityCode: e.entity,
          recordId: e.recordId,
          payload: await this.payloads.render(webhook, e, memo),
          occurredAt: e.occurredAt,
        });
      }
      const to = events[events.length - 1].sequence;
      const moved = await this.writes.transaction(
        this.database.dataSource,
        async (tx) => {
          const cursor = await this.webhooks.cursorOf(tx.config, webhook, owner);
          if (cursor !== webhook.cursor) return false;
          if (rows.length > 0) await this.deliveries.insertMany(tx.config, rows, now);
          return this.webhooks.advanceCursor(tx.config, webhook, owner, webhook.cursor, to);
        },
        'READ COMMITTED',
      );
      if (!moved) return 0;
      this.telemetry.relay(rows.length);
      return rows.length + 1;
    } finally {
      await this.tx((qr) => this.webhooks.releaseRelay(webhook, owner, qr)).catch(() => undefined);
    }
  }

  /** Secrets by their stored (encrypted) text: decrypted once, not per delivery. */
  private readonly secrets = new LRUCache<string, string>({ max: 1000 });

  private secretOf(encrypted: string): string {
    let secret = this.secrets.get(encrypted);
    if (secret === undefined) {
      secret = decryptConnectionString(encrypted, storedSecretKeyRing(this.config.crypto), 'mtb:app_webhooks:v1');
      this.secrets.set(encrypted, secret);
    }
    return secret;
  }

  /** Successful attempts waiting to be recorded; written together, one transaction per tick. */
  private delivered: PendingSuccess[] = [];
  private flushScheduled = false;

  /**
   * Records a successful attempt (DELIVERED, the webhook's failure clock stopped) together with
   * the others that ended in the same tick: one transaction for all of them instead of one each
   * (issue 29: at 500 events a second the per-delivery commits were the bound). Whether this
   * worker still owned the delivery (false: its lease ran out and another instance took it).
   */
  private recordDelivered(success: Omit<PendingSuccess, 'settle'>): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      this.delivered.push({ ...success, settle: { resolve, reject } });
      if (this.flushScheduled) return;
      this.flushScheduled = true;
      setImmediate(() => void this.flushDelivered());
    });
  }

  private async flushDelivered(): Promise<void> {
    this.flushScheduled = false;
    const batch = this.delivered;
    this.delivered = [];
    try {
      const committed = await this.tx(async (qr) => {
        const done: boolean[] = [];
        for (const b of batch) done.push(await this.deliveries.finish(b.d, b.owner, 'DELIVERED', b.outcome, null, qr));
        const hooks = new Map(batch.map((b) => [`${b.d.tenantId}:${b.webhookId}`, b]));
        for (const b of hooks.values()) await this.webhooks.markSuccess(b.d.tenantId, b.webhookId, qr);
        return done;
      });
      batch.forEach((b, i) => b.settle.resolve(committed[i]));
    } catch (err) {
      for (const b of batch) b.settle.reject(err);
    }
  }

  /** Claims what this instance has room for and starts sending; the number claimed. */
  async claimAndSend(): Promise<number> {
    const free = this.config.webhooks.concurrency - this.active.size;
    if (free <= 0) return 0;
    const owner = `${this.workerId}#${++this.claims}`;
    const claimed = await this.writes.transaction(
      this.database.dataSource,
      (tx) => this.deliveries.claim(tx.config, owner, free, this.leaseMs, Date.now()),
      'READ COMMITTED',
    );
    // The claim's webhooks, read once for all its deliveries.
    const hooks = new Map<string, Promise<WebhookRow | null>>();
    const webhookOf = (d: Delivery) => {
      const key = `${d.tenantId}:${d.webhookId}`;
      let hook = hooks.get(key);
      if (!hook) {
        hook = this.webhooks.findById(d.tenantId, d.webhookId);
        hooks.set(key, hook);
      }
      return hook;
    };
    for (const d of claimed) {
      const p = this.attempt(d, owner, webhookOf)
        .catch((err: unknown) => this.reportError(err))
        .finally(() => {
          this.active.delete(p);
          this.wake();
        });
      this.active.add(p);
    }
    return claimed.length;
  }

  private async attempt(
    d: Delivery,
    owner: string,
    webhookOf: (d: Delivery) => Promise<WebhookRow | null>,
  ): Promise<void> {
    const webhook = await webhookOf(d);
    const log = {
      tenantId: d.tenantId,
      webhook: webhook?.code,
      deliveryId: d.id,
      webhookId: d.uid,
      attempt: d.attempts,
    };
    if (!webhook || !webhook.active || !webhook.secretEncrypted) {
      // Deleted or disabled meanwhile: back to PENDING untouched (a deleted hook's rows are never claimed again).
      await this.tx((qr) =>
        this.deliveries.finish(
          d,
          owner,
          'PENDING',
          { status: null, error: 'webhook inactive', response: null, at: Date.now() },
          Date.now(),
          qr,
        ),
      );
      return;
    }
    const secret = this.secretOf(webhook.secretEncrypted);
    const headers = signatureHeaders(secret, d.uid, Math.floor(Date.now() / 1000), d.payload);
    const result = await sendWebhook(
      webhook.url,
      headers,
      d.payload,
      this.config.webhooks.timeoutMs,
      this.config.webhooks,
    );
    const at = Date.now();
    const outcome = { status: result.status, error: result.error, response: result.response, at };
    const ok = result.status !== null && result.status >= 200 && result.status < 300;
    if (ok) {
      const committed = await this.recordDelivered({ d, owner, outcome, webhookId: webhook.id });
      this.telemetry.outcome(committed ? 'delivered' : 'lost', result.ms, at - d.occurredAt);
      this.logger.log(
        { event: 'webhook_delivered', ...log, status: result.status, ms: result.ms, committed },
        'webhook_delivered',
      );
      return;
    }
    const gone = result.status === 410;
    const dead = gone || d.attempts >= this.config.webhooks.maxAttempts;
    const next = dead ? null : at + retryDelayMs(this.config.webhooks.retryScheduleMs, d.attempts);
    const committed = await this.tx((qr) =>
      this.deliveries.finish(d, owner, dead ? 'DEAD' : 'PENDING', outcome, next, qr),
    );
    const refused = result.error?.startsWith('refused:') === true;
    this.telemetry.outcome(!committed ? 'lost' : refused ? 'refused' : dead ? 'dead' : 'retry', result.ms);
    this.logger.warn(
      {
        event: dead ? 'webhook_dead' : 'webhook_retry',
        ...log,
        status: result.status,
        error: result.error,
        ms: result.ms,
        nextAttemptAt: next === null ? null : new Date(next).toISOString(),
      },
      dead ? 'webhook_dead' : 'webhook_retry',
    );
    const since = await this.tx((qr) => this.webhooks.markFailure(d.tenantId, webhook.id, at, qr));
    const reason = gone
      ? 'The receiver answered 410 Gone'
      : since !== null && at - since >= this.config.webhooks.disableAfterMs
        ? `Failing since ${new Date(since).toISOString()} without a success`
        : undefined;
    if (reason && (await this.tx((qr) => this.webhooks.disable(d.tenantId, webhook.id, reason, at, qr))))
      this.logger.warn(
        { event: 'webhook_disabled', tenantId: d.tenantId, webhook: webhook.code, reason },
        'webhook_disabled',
      );
  }

  /** At most one warning per 10 s while the database is away. */
  private reportError(err: unknown): void {
    if (Date.now() - this.lastError < 10_000) return;
    this.lastError = Date.now();
    this.logger.warn({ err: errorMessage(err) }, 'Webhook worker: a pass failed; retrying');
  }
}
