import type { SchemaObject } from '@nestjs/swagger';
import { JOB_STATUSES } from '../../jobs/job.types';
import { EXPORT_FORMATS } from './export-model';

/** OpenAPI pieces of an export that outlives its request (issue 21 #1): the 202 and the job routes. */

/**
 * A job's id as clients get it (issue 34): 16 random bytes in base64url, not enumerable. A job is
 * found by its creator and by job administrators only; to anyone else, and for any other id, 404.
 */
export const PUBLIC_JOB_ID_SCHEMA: SchemaObject = {
  type: 'string',
  pattern: '^[A-Za-z0-9_-]{22}$',
  example: 'hV3kq0Zb9mT2xw7LcR1pAg',
};

export const JOB_ID_PARAM = {
  name: 'jobId',
  description:
    'The id the job was answered with; another user’s job is 404 unless the caller administers jobs',
  schema: PUBLIC_JOB_ID_SCHEMA,
};

export const EXPORT_JOB_SCHEMA: SchemaObject = {
  type: 'object',
  required: ['jobId', 'status', 'dataviewCode', 'processed', 'createdAt', 'statusUrl'],
  properties: {
    jobId: PUBLIC_JOB_ID_SCHEMA,
    status: { type: 'string', enum: [...JOB_STATUSES], example: 'RUNNING' },
    dataviewCode: { type: 'string', example: 'customers_grid' },
    format: { type: 'string', enum: [...EXPORT_FORMATS], nullable: true, example: 'pdf' },
    processed: { type: 'integer', description: 'Rows read so far', example: 4000 },
    total: { type: 'integer', nullable: true, description: 'Rows the file will hold', example: 10000 },
    createdAt: { type: 'string', format: 'date-time' },
    finishedAt: { type: 'string', format: 'date-time', nullable: true },
    statusUrl: { type: 'string', example: '/api/v1/exports/hV3kq0Zb9mT2xw7LcR1pAg' },
    filename: { type: 'string', description: 'When COMPLETED', example: 'customers_2026-01-05.pdf' },
    downloadUrl: {
      type: 'string',
      description:
        'When COMPLETED: GET it with the same tenant and a token, as its creator or a job administrator, within EXPORT_TTL_S',
      example: '/api/v1/downloads/q3v0cXlS1i8aQ3kE0nqKJ5x7sV8b2a9yXo0Wm4r6T1c',
    },
    error: {
      type: 'object',
      description: 'When FAILED: the error the export route would have answered (D17, D18)',
      properties: { code: { type: 'string' }, message: { type: 'string' }, details: {} },
    },
  },
};

const enveloped = (data: SchemaObject): SchemaObject => ({
  type: 'object',
  properties: {
    success: { type: 'boolean', example: true },
    data,
    meta: {
      type: 'object',
      properties: { timestamp: { type: 'string' }, requestId: { type: 'string' } },
    },
  },
});

export const EXPORT_JOB_ANSWER_SCHEMA: SchemaObject = enveloped(EXPORT_JOB_SCHEMA);
