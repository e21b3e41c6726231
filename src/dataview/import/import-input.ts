import { ValidationError } from '../../common/errors/app-error';
import type { ImportFormat } from './import-file';

export const IMPORT_JOB_KIND = 'entity.import';
export const IMPORT_FEATURES = ['import'] as const;
/** Rows written per transaction when failed rows are skipped: one idempotency record each. */
export const BATCH_ROWS = 500;
/** Errors kept in the job's answer. */
export const MAX_ERRORS = 100;

export interface ImportJobInput {
  entityCode: string;
  fileId: string;
  format: ImportFormat;
  mode: 'create' | 'upsert';
  /** upsert: the unique field (or `id`) that finds the record a row updates. */
  key?: string;
  dryRun: boolean;
  onError: 'abort' | 'skip';
  mapping: Record<string, string | null>;
}

export interface ImportRowError {
  row: number;
  field: string | null;
  error: string;
}

export interface ImportResult {
  total: number;
  created: number;
  updated: number;
  skipped: number;
  failed: number;
  errors: ImportRowError[];
  ignoredColumns: string[];
  errorFileUrl?: string;
}

export function importJobInput(value: unknown): ImportJobInput {
  const v = (value ?? {}) as Partial<ImportJobInput>;
  if (typeof v.entityCode !== 'string' || typeof v.fileId !== 'string')
    throw new ValidationError('Invalid import job', [{ field: 'entityCode', error: 'is missing' }]);
  return {
    entityCode: v.entityCode,
    fileId: v.fileId,
    format: v.format === 'xlsx' ? 'xlsx' : 'csv',
    mode: v.mode === 'upsert' ? 'upsert' : 'create',
    ...(typeof v.key === 'string' ? { key: v.key } : {}),
    dryRun: v.dryRun === true,
    onError: v.onError === 'skip' ? 'skip' : 'abort',
    mapping: v.mapping ?? {},
  };
}
