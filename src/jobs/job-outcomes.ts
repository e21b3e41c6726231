import { AppError } from '../common/errors/app-error';
import type { ClaimedJob, JobError } from './job.types';

/** Why a running job's signal was aborted. */
export class JobStopped extends Error {
  constructor(readonly reason: 'cancelled-or-lost' | 'shutdown') {
    super(
      reason === 'shutdown' ? 'The instance is shutting down' : 'The job was cancelled or its lease lost',
    );
  }
}

/** What a failed job says (its `error`). */
export function jobError(err: unknown): JobError {
  // A domain error is shown as it is; an internal one never (D18).
  if (err instanceof AppError && err.code !== 'SERVICE_ERROR')
    return { code: err.code, message: err.message, ...(err.details == null ? {} : { details: err.details }) };
  // Never a raw driver or library message (D18): the log has it, the job says what happened.
  return { code: 'SERVICE_ERROR', message: 'The job failed' };
}

/** The code of a job failed by the poison-job rule (the job's `error.code`; not an HTTP answer's). */
export const JOB_QUARANTINED = 'JOB_QUARANTINED';

/**
 * The poison-job rule (issue 34 #1; docs/operations.md › Background jobs). A claim whose instance
 * died — its lease ran out while the job was RUNNING; a graceful shutdown releases the job instead
 * and counts for nothing — is judged by how far it got before it died:
 *
 * - no progress at all (its `processed` still 0): the job may be what killed the instance (a file
 *   that exhausts the heap), and running it again would kill the next one. It is failed at once,
 *   quarantined, with the attempt that died in its error; nobody runs it again.
 * - some progress (a batch committed and reported): the death was met mid-way, work is kept (D53
 *   skips the committed batches), and the job resumes — each such claim still spends an attempt,
 *   so `maxAttempts` bounds a job that keeps dying after progress.
 *
 * Null when the claim may run the job.
 */
export function quarantineOf(job: ClaimedJob): JobError | null {
  if (!job.crashedClaim || job.crashedClaim.processed > 0) return null;
  const attempt = job.attempts - 1;
  return {
    code: JOB_QUARANTINED,
    message:
      `The instance running this job stopped during attempt ${attempt}, before the job made any ` +
      'progress: the job may be what stopped it, so it is not retried',
    details: { attempt },
  };
}

/** Why a job stopped under its worker while still RUNNING and held: its tenant went (erase, archive). */
export const TENANT_INACTIVE: JobError = { code: 'FORBIDDEN', message: 'Tenant is not active' };
