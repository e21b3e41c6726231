import { type JobViewer, maySeeJob } from '../../jobs/job-access';
import type { StoredExportMeta } from './export-store';

/**
 * Whether `viewer` may download a stored file of its tenant (issue 34): the job's rule for the
 * file's kind (jobs/job-access.ts). An export or an import's error file: its owner or a job
 * administrator (`admin:jobs`, which `*:*` grants, or `admin:system`). A tenant export ZIP: a
 * holder of `admin:system` only. A file without a kind (an import's source, a file stored before
 * kinds were recorded): its owner only.
 */
export function mayDownload(meta: Pick<StoredExportMeta, 'createdBy' | 'kind'>, viewer: JobViewer): boolean {
  switch (meta.kind) {
    case 'export':
    case 'import-errors':
      return maySeeJob(meta.createdBy, viewer, 'tenant');
    case 'tenant-export':
      return maySeeJob(meta.createdBy, viewer, 'system');
    case undefined:
      return meta.createdBy === viewer.userId;
  }
}
