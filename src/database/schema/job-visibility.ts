import { type ColumnDef, type IndexDef, str } from './columns';

/**
 * Issue 34: who may see a job and its files. Added to tables of earlier migrations by migration
 * JobVisibility1796262000000 (never to their TableDefs, which those landed migrations create):
 *
 * - `job_public_id`: the id clients know a job by — 16 random bytes in base64url (22 characters),
 *   so ids cannot be enumerated. Unique per tenant; NULL on the rows written before it (those jobs
 *   answer 404 by any id) and on system jobs.
 * - `exf_kind`: what a stored file is (an export, an import's error file, a tenant export), which
 *   decides who besides its owner may download it. NULL: only its owner (an import's source file,
 *   and files stored before the kind was recorded).
 */
export const JOB_PUBLIC_ID_COLUMNS: readonly ColumnDef[] = [str('job_public_id', 32)];
export const JOB_PUBLIC_ID_UNIQUE: IndexDef = { columns: ['job_tenant_id', 'job_public_id'], unique: true };
export const EXPORT_FILE_KIND_COLUMNS: readonly ColumnDef[] = [str('exf_kind', 20)];
