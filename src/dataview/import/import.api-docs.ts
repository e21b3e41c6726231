import type { SchemaObject } from '@nestjs/swagger';
import { JOB_STATUSES } from '../../jobs/job.types';
import { PUBLIC_JOB_ID_SCHEMA } from '../export/export-jobs.api-docs';

/** OpenAPI pieces of imports (D53). */

export const IMPORT_ID_PARAM = {
  name: 'importId',
  description:
    'The id the import was answered with; another user’s import is 404 unless the caller administers jobs',
  schema: PUBLIC_JOB_ID_SCHEMA,
};

export const IMPORT_JOB_SCHEMA: SchemaObject = {
  type: 'object',
  required: [
    'importId',
    'entity',
    'status',
    'dryRun',
    'mode',
    'onError',
    'processed',
    'created',
    'updated',
    'skipped',
    'failed',
    'errors',
    'ignoredColumns',
    'createdAt',
    'statusUrl',
  ],
  properties: {
    importId: PUBLIC_JOB_ID_SCHEMA,
    entity: { type: 'string', example: 'customers' },
    status: { type: 'string', enum: [...JOB_STATUSES], example: 'COMPLETED' },
    dryRun: { type: 'boolean', example: false },
    mode: { type: 'string', enum: ['create', 'upsert'], example: 'create' },
    onError: { type: 'string', enum: ['abort', 'skip'], example: 'skip' },
    total: { type: 'integer', nullable: true, description: 'Data rows of the file (null until counted)' },
    processed: { type: 'integer', description: 'Rows handled so far', example: 1000 },
    created: { type: 'integer', description: 'Rows written (a dry run: rows that would be written)' },
    updated: { type: 'integer', description: 'Rows that updated a record (upsert)' },
    skipped: {
      type: 'integer',
      description: 'Valid rows not written because onError=abort met a failing row',
    },
    failed: { type: 'integer', description: 'Rows refused' },
    errors: {
      type: 'array',
      description: 'The first 100 errors: the row number in the file (header = 1), the field, the reason',
      items: {
        type: 'object',
        required: ['row', 'field', 'error'],
        properties: {
          row: { type: 'integer', example: 7 },
          field: { type: 'string', nullable: true, example: 'email' },
          error: { type: 'string', example: 'must be a valid email' },
        },
      },
    },
    ignoredColumns: {
      type: 'array',
      items: { type: 'string' },
      description: 'Header columns that name no writable field (left out)',
    },
    errorFileUrl: {
      type: 'string',
      description:
        'When rows failed: a CSV of the failed rows as the importing user may see them (masked fields masked, fields it may not see left out, formulas neutralized as D48) with an `error` column (downloads route)',
      example: '/api/v1/downloads/q3v0cXlS1i8aQ3kE0nqKJ5x7sV8b2a9yXo0Wm4r6T1c',
    },
    error: {
      type: 'object',
      description: 'When FAILED: why the file could not be imported (D17, D18)',
      properties: { code: { type: 'string' }, message: { type: 'string' }, details: {} },
    },
    createdAt: { type: 'string', format: 'date-time' },
    finishedAt: { type: 'string', format: 'date-time', nullable: true },
    statusUrl: { type: 'string', example: '/api/v1/imports/hV3kq0Zb9mT2xw7LcR1pAg' },
  },
};

export const IMPORT_JOB_ANSWER_SCHEMA: SchemaObject = {
  type: 'object',
  properties: {
    success: { type: 'boolean', example: true },
    data: IMPORT_JOB_SCHEMA,
    meta: {
      type: 'object',
      properties: { timestamp: { type: 'string' }, requestId: { type: 'string' } },
    },
  },
};
