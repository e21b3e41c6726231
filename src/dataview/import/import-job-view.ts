import { publicIdOf } from '../../jobs/job-access';
import type { Job, JobError, JobStatus } from '../../jobs/job.types';
import { type ImportResult, importJobInput } from './import-input';

/** An import as its routes answer it (D53). */
export interface ImportJobView extends Omit<ImportResult, 'total'> {
  /** The job's public id (issue 34): opaque, not enumerable. */
  importId: string;
  entity: string;
  status: JobStatus;
  dryRun: boolean;
  mode: string;
  onError: string;
  /** null until the job has counted the file's rows. */
  total: number | null;
  processed: number;
  /** When FAILED: why the file could not be imported. */
  error?: JobError;
  createdAt: string;
  finishedAt: string | null;
  statusUrl: string;
}

export function importStatusUrl(id: string): string {
  return `/api/v1/imports/${encodeURIComponent(id)}`;
}

export function importJobView(job: Job): ImportJobView {
  const input = importJobInput(job.input);
  const r = (job.status === 'COMPLETED' ? job.result : null) as Partial<ImportResult> | null;
  return {
    importId: publicIdOf(job),
    entity: input.entityCode,
    status: job.status,
    dryRun: input.dryRun,
    mode: input.mode,
    onError: input.onError,
    total: r?.total ?? job.total,
    processed: job.processed,
    created: r?.created ?? 0,
    updated: r?.updated ?? 0,
    skipped: r?.skipped ?? 0,
    failed: r?.failed ?? 0,
    errors: r?.errors ?? [],
    ignoredColumns: r?.ignoredColumns ?? [],
    ...(r?.errorFileUrl ? { errorFileUrl: r.errorFileUrl } : {}),
    ...(job.status === 'FAILED' && job.error ? { error: job.error } : {}),
    createdAt: new Date(job.createdAt).toISOString(),
    finishedAt: job.finishedAt === null ? null : new Date(job.finishedAt).toISOString(),
    statusUrl: importStatusUrl(publicIdOf(job)),
  };
}
