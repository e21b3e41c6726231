import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { AppConfig } from '../../config/config.schema';
import { InjectConfig } from '../../config/inject-config.decorator';
import { ReadinessService } from '../../health/readiness.service';
import { messageOf } from '../engine/messages';
import { InstanceTransitions } from '../engine/transitions';
import { WorkflowEngine } from '../engine/workflow-engine';
import { QueueRepository, type QueueRow } from './queue.repository';
import { WorkflowWakeBus } from './wake-bus';

/** The shortest pause of an idle worker; it doubles up to WORKFLOW_POLL_MS. */
const MIN_IDLE_MS = 25;

/**
 * The workflow worker of this instance (D49, issue 12 #5): up to WORKFLOW_WORKER_CONCURRENCY steps
 * at once, claimed from the shared wft_queue with the dialect's skip-locked read and leased for
 * WORKFLOW_LEASE_MS, renewed every third of that while the step runs. Idle, it polls with backoff
 * (up to WORKFLOW_POLL_MS) and is woken at once through the wake bus when work is queued anywhere.
 * WORKFLOW_WORKER=off leaves this instance serving the API only.
 */
@Injectable()
export class WorkflowWorker implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('WorkflowWorker');
  /** Names this worker in wfq_claimed_by. */
  readonly workerId = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly active = new Map<number, Promise<void>>();
  private running = false;
  private idleMs = MIN_IDLE_MS;
  private wakeUp?: () => void;
  private loopDone?: Promise<void>;
  private renewTimer?: NodeJS.Timeout;
  private stopListening?: () => void;
  private lastError = 0;

  constructor(
    @InjectConfig() private readonly config: AppConfig,
    private readonly engine: WorkflowEngine,
    private readonly transitions: InstanceTransitions,
    private readonly queue: QueueRepository,
    private readonly wakeBus: WorkflowWakeBus,
    private readonly readiness: ReadinessService,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.workflow.worker) {
      this.logger.log('Workflow worker off (WORKFLOW_WORKER=off): this instance runs no workflow steps');
      return;
    }
    this.running = true;
    this.stopListening = this.wakeBus.listen(() => this.wake());
    const lease = this.config.workflow.leaseMs;
    this.renewTimer = setInterval(() => void this.renewLeases(), Math.max(100, Math.floor(lease / 3)));
    this.renewTimer.unref();
    this.loopDone = this.loop();
  }

  /**
   * Stops claiming, then waits (up to the lease) for the steps that run; their rows' leases expire
   * otherwise. Before the application's shutdown hooks, which close the pools the steps use
   * (issue 20 #5); claiming already stopped when readiness fell at the signal.
   */
  async beforeApplicationShutdown(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.stopListening?.();
    this.wake();
    await this.loopDone;
    const running = this.active.size;
    const pending = Promise.allSettled([...this.active.values()]);
    await Promise.race([pending, new Promise((r) => setTimeout(r, this.config.workflow.leaseMs).unref())]);
    if (this.renewTimer) clearInterval(this.renewTimer);
    const left = this.active.size;
    this.logger.log(
      { stepsFinished: running - left, stepsLeftToLease: left },
      `Workflow worker stopped: ${running - left} running step(s) finished, ${left} left to their lease`,
    );
  }

  /** Steps running now on this instance. */
  get busy(): number {
    return this.active.size;
  }

  private wake(): void {
    this.idleMs = MIN_IDLE_MS;
    const w = this.wakeUp;
    this.wakeUp = undefined;
    w?.();
  }

  private async loop(): Promise<void> {
    const { concurrency, leaseMs, pollMs } = this.config.workflow;
    while (this.running) {
      const free = concurrency - this.active.size;
      let claimed: QueueRow[] = [];
      // Until start-up has connected, migrated and seeded (spec §3.3), there is no queue to read.
      if (free > 0 && this.readiness.ready) {
        try {
          claimed = await this.transitions.transaction((qr) =>
            this.queue.claim(qr, this.workerId, free, leaseMs, Date.now()),
          );
        } catch (err) {
          this.reportError(err);
        }
      }
      for (const row of claimed) this.startRow(row);
      if (claimed.length > 0 && claimed.length === free) {
        this.idleMs = MIN_IDLE_MS;
        continue;
      }
      // Idle (or every slot busy): wait for a wake-up, a free slot or the poll interval.
      await new Promise<void>((resolve) => {
        const timer = setTimeout(
          () => {
            this.wakeUp = undefined;
            resolve();
          },
          claimed.length > 0 ? MIN_IDLE_MS : this.idleMs,
        );
        timer.unref();
        this.wakeUp = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      if (claimed.length === 0) this.idleMs = Math.min(pollMs, this.idleMs * 2);
    }
  }

  private startRow(row: QueueRow): void {
    const run = this.engine
      .process(row)
      .catch((err: unknown) => {
        // Nothing committed: the row's lease runs out and any worker claims it again.
        this.logger.warn(
          { instanceId: row.instanceId, node: row.nodeId, err: messageOf(err) },
          'Workflow step crashed; its lease will expire and it will be retried',
        );
      })
      .finally(() => {
        this.active.delete(row.id);
        this.wake();
      });
    this.active.set(row.id, run);
  }

  private async renewLeases(): Promise<void> {
    if (this.active.size === 0) return;
    try {
      await this.queue.renew(
        this.workerId,
        [...this.active.keys()],
        this.config.workflow.leaseMs,
        Date.now(),
      );
    } catch (err) {
      this.reportError(err);
    }
  }

  /** At most one warning per 10 s while the database is away. */
  private reportError(err: unknown): void {
    if (Date.now() - this.lastError < 10_000) return;
    this.lastError = Date.now();
    this.logger.warn({ err: messageOf(err) }, 'Workflow worker: queue not reachable; retrying');
  }
}
