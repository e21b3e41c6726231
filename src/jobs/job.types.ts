import type { QueryRunner } from 'typeorm';

/** A job's life: PENDING → RUNNING → COMPLETED | FAILED | CANCELLED (a lost lease goes back to RUNNING). */
export const JOB_STATUSES = ['PENDING', 'RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

/** Statuses of a job that is not finished: it counts against the admission limits. */
export const ACTIVE_STATUSES: readonly JobStatus[] = ['PENDING', 'RUNNING'];

export function isFinished(status: JobStatus): boolean {
  return status === 'COMPLETED' || status === 'FAILED' || status === 'CANCELLED';
}

/** Why a job failed, as the error envelope would say it (D17, D18). */
export interface JobError {
  code: string;
  message: string;
  details?: unknown;
}

/** A job as its tenant may read it. */
export interface Job {
  /** The row's key: internal (logs, batches), never given to clients. */
  id: number;
  /**
   * The id clients know the job by (issue 34): 16 random bytes in base64url, unique per tenant.
   * Null for jobs queued before it existed.
   */
  publicId: string | null;
  tenantId: string;
  kind: string;
  status: JobStatus;
  /** The user the job acts as (null for a system job). */
  createdBy: number | null;
  /** The id of the request that queued it: the job's log lines carry it. */
  requestId: string | null;
  input: unknown;
  processed: number;
  total: number | null;
  result: unknown;
  error: JobError | null;
  attempts: number;
  createdAt: number;
  startedAt: number | null;
  updatedAt: number;
  finishedAt: number | null;
}

/** A job a worker holds: `owner` fences every write of that worker (D49). */
export interface ClaimedJob extends Job {
  owner: string;
  leaseUntil: number;
  /**
   * Set when this claim took the job from a claim whose instance died (its lease ran out while it
   * was RUNNING): how far that claim had got (its progress; each claim starts again from 0).
   */
  crashedClaim?: { processed: number };
}

export interface NewJob {
  /** The job's public id; a new one when absent. */
  publicId?: string;
  tenantId: string;
  kind: string;
  createdBy: number | null;
  requestId: string | null;
  input: unknown;
}

/** What a running job may do besides its work. */
export interface JobRun {
  /**
   * Aborted when the job must stop: cancelled, its lease lost to another worker, or the instance
   * shutting down. The handler stops at the next chance and throws; nothing it did is committed.
   */
  signal: AbortSignal;
  /**
   * Records progress (kept in the job row, logged now and then). Rejects with the signal's reason
   * once the job has been cancelled, so a handler that reports progress stops by itself.
   */
  progress(processed: number, total: number | null): Promise<void>;
  /**
   * In the transaction that commits a part of the job's work (a batch), before its commit: takes
   * the job's row — a cancel or a tenant erase then waits for that commit — and checks that this
   * worker still holds the job and that its tenant is still active. Otherwise it stops the job and
   * throws, and the transaction rolls back: nothing more is committed.
   */
  hold(qr: QueryRunner): Promise<void>;
}

/**
 * One kind of job, registered by the feature module that owns it. The worker rebuilds nothing:
 * `run` gets the job row (tenant, user, request id, input) and rebuilds its own context from those
 * ids, then calls the same use cases a request would.
 */
export interface JobHandler {
  readonly kind: string;
  /** Jobs of this kind this instance runs at once. */
  readonly concurrency: number;
  /** Claims of one job before it is failed (a claim whose worker died counts). */
  readonly maxAttempts: number;
  /** The job's work; its value is the job's result. An AppError below 500 fails it at once. */
  run(job: ClaimedJob, run: JobRun): Promise<unknown>;
}
