import { randomBytes } from 'node:crypto';
import { fromDbTimestamp } from '../database/dialect';
import { columnText } from '../database/raw-values';
import { Job, JOB_STATUSES, JobError, JobStatus } from './job.types';

/** A job's public id (issue 34): 16 random bytes in base64url, as the routes take it. */
export const PUBLIC_JOB_ID = /^[A-Za-z0-9_-]{22}$/;

export function newPublicJobId(): string {
  return randomBytes(16).toString('base64url');
}

/** JSON text of a value, within what a JSON column should hold. */
export function jsonText(value: unknown): string | null {
  return value === undefined || value === null ? null : JSON.stringify(value);
}

function parseJson(value: unknown): unknown {
  const text = columnText(value);
  if (text === null) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

function statusOf(value: unknown): JobStatus {
  const s = columnText(value) as JobStatus;
  return JOB_STATUSES.includes(s) ? s : 'FAILED';
}

/** A row of app_jobs as a Job (JSON columns parsed, timestamps in ms of the dialect `driverType`). */
export function jobOfRow(raw: Record<string, unknown>, driverType: string): Job {
  const t = (v: unknown) => fromDbTimestamp(v, driverType);
  const error = parseJson(raw.job_error) as JobError | null;
  return {
    id: Number(raw.job_id),
    publicId: columnText(raw.job_public_id),
    tenantId: String(raw.job_tenant_id),
    kind: String(columnText(raw.job_kind)),
    status: statusOf(raw.job_status),
    createdBy:
      raw.job_created_by === null || raw.job_created_by === undefined ? null : Number(raw.job_created_by),
    requestId: columnText(raw.job_request_id),
    input: parseJson(raw.job_input),
    processed: Number(raw.job_processed ?? 0),
    total: raw.job_total === null || raw.job_total === undefined ? null : Number(raw.job_total),
    result: parseJson(raw.job_result),
    error: error && typeof error === 'object' ? error : null,
    attempts: Number(raw.job_attempts ?? 0),
    createdAt: t(raw.job_created_at) ?? 0,
    startedAt: t(raw.job_started_at),
    updatedAt: t(raw.job_updated_at) ?? 0,
    finishedAt: t(raw.job_finished_at),
  };
}
