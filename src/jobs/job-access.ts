import { hasPermission, isSystemAdmin } from '../profile/access/permissions';

/**
 * Who may see a job besides its creator (issue 34): a holder of `admin:jobs` — granted by a tenant
 * administrator's `*:*` (D9 wildcards) — or of `admin:system`. A tenant export (D58) is a system
 * administrator's matter: only `admin:system` (named by the role itself, as everywhere) reaches it.
 */
export const JOB_ADMIN_PERMISSION = 'admin:jobs';

/** Whose jobs a caller may see: `tenant` jobs (imports, exports) or `system` ones (tenant exports). */
export type JobAudience = 'tenant' | 'system';

export interface JobViewer {
  userId: number;
  permissions: readonly string[];
}

/** Whether `viewer` may administer the jobs of an audience (see every user's). */
export function administersJobs(viewer: JobViewer, audience: JobAudience): boolean {
  if (isSystemAdmin(viewer.permissions)) return true;
  return audience === 'tenant' && hasPermission(viewer.permissions, JOB_ADMIN_PERMISSION);
}

/**
 * Whether `viewer` may see a job (or a file) of `owner`: its owner (a tenant job), or whoever
 * administers the audience's jobs. A system job is never seen by its owner alone: the owner must
 * still hold `admin:system`.
 */
export function maySeeJob(owner: number | null, viewer: JobViewer, audience: JobAudience): boolean {
  if (administersJobs(viewer, audience)) return true;
  return audience === 'tenant' && owner !== null && owner === viewer.userId;
}

/** The id a job is given to clients by; every job a route answers was queued with one. */
export function publicIdOf(job: { id: number; publicId: string | null }): string {
  if (!job.publicId) throw new Error(`Job ${job.id} has no public id`);
  return job.publicId;
}
