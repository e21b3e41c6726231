import { Injectable } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AppConfig } from '../config/config.schema';
import { InjectConfig } from '../config/inject-config.decorator';
import { JobHolds } from './job-holds';
import { JobTransactions } from './job-transactions';
import { JobWorker } from './job-worker';

/** How often a stop looks again whether every worker has let go. */
const LET_GO_POLL_MS = 50;

export interface StoppedJobs {
  /** Unfinished jobs of the tenant that were cancelled. */
  cancelled: number;
  /** Jobs still held when the wait ended (0 unless a worker outlived its lease). */
  stillHeld: number;
}

/**
 * Stops every job of a tenant before its data is erased (issue 34 #4), across instances: the rows
 * are cancelled in the job table — which every worker reads at its next renewal (progress) or
 * per-batch hold, whichever instance it runs on — and this instance's workers are told at once.
 * Then it waits until no worker holds one of them any more: each lets go once its handler has
 * returned (JobWorker), and a cancelled lease is never renewed, so a worker that died or hangs
 * stops counting when its lease runs out — the wait is bounded by JOB_LEASE_MS. A batch that was
 * committing when the cancel came commits before the cancel does (its hold holds the job's row);
 * any later one rolls back.
 */
@Injectable()
export class TenantJobs {
  constructor(
    @InjectConfig() private readonly config: AppConfig,
    private readonly holds: JobHolds,
    private readonly transactions: JobTransactions,
    private readonly worker: JobWorker,
  ) {}

  async stop(tenantId: string): Promise<StoppedJobs> {
    const cancelled = await this.transactions.run((tx) =>
      this.holds.cancelTenant(tx.config, tenantId, Date.now()),
    );
    this.worker.stopTenant(tenantId);
    const deadline = Date.now() + this.config.jobs.leaseMs + 1000;
    let held = await this.holds.heldCount(tenantId, Date.now());
    while (held > 0 && Date.now() < deadline) {
      await sleep(LET_GO_POLL_MS);
      held = await this.holds.heldCount(tenantId, Date.now());
    }
    return { cancelled, stillHeld: held };
  }
}
