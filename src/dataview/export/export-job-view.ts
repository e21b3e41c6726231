import { AppError, ConflictError } from '../../common/errors/app-error';
import { ERROR_STATUS, type ErrorCode } from '../../common/errors/error-codes';
import { publicIdOf } from '../../jobs/job-access';
import type { Job, JobError, JobStatus } from '../../jobs/job.types';
import type { ExportAnswer } from './export-dataview';
import { exportJobInput } from './export-job';

/** An export job as its routes answer it (202 of the export route, the status and cancel routes). */
export interface ExportJobView {
  /** The job's public id (issue 34): opaque, not enumerable. */
  jobId: string;
  status: JobStatus;
  dataviewCode: string;
  format: string | null;
  /** Rows read so far, and the rows the file will hold (null until known). */
  processed: number;
  total: number | null;
  createdAt: string;
  finishedAt: string | null;
  /** Where to ask again (GET). */
  statusUrl: string;
  /** When COMPLETED: the export route's answer. */
  filename?: string;
  downloadUrl?: string;
  /** When FAILED: what the export route would have answered. */
  error?: JobError;
}

export function exportStatusUrl(jobId: string): string {
  return `/api/v1/exports/${encodeURIComponent(jobId)}`;
}

function resultOf(job: Job): ExportAnswer | undefined {
  const r = job.result as Partial<ExportAnswer> | null;
  return r && typeof r.filename === 'string' && typeof r.downloadUrl === 'string'
    ? { filename: r.filename, downloadUrl: r.downloadUrl }
    : undefined;
}

export function exportJobView(job: Job): ExportJobView {
  const input = exportJobInput(job.input);
  const body = (input.body ?? {}) as { format?: unknown };
  const result = job.status === 'COMPLETED' ? resultOf(job) : undefined;
  return {
    jobId: publicIdOf(job),
    status: job.status,
    dataviewCode: input.dataviewCode,
    format: typeof body.format === 'string' ? body.format : null,
    processed: job.processed,
    total: job.total,
    createdAt: new Date(job.createdAt).toISOString(),
    finishedAt: job.finishedAt === null ? null : new Date(job.finishedAt).toISOString(),
    statusUrl: exportStatusUrl(publicIdOf(job)),
    ...(result ?? {}),
    ...(job.status === 'FAILED' && job.error ? { error: job.error } : {}),
  };
}

/** The export route's answer for a job that finished within its wait: the file, or the error. */
export function exportOutcome(job: Job): ExportAnswer {
  const result = resultOf(job);
  if (job.status === 'COMPLETED' && result) return result;
  if (job.status === 'CANCELLED') throw new ConflictError('The export was cancelled', null, 'illegal_state');
  const error = job.error;
  const code = error && error.code in ERROR_STATUS ? (error.code as ErrorCode) : 'SERVICE_ERROR';
  throw new AppError(code, error?.message ?? 'The export failed', error?.details ?? null);
}
