import type { SchemaObject } from '@nestjs/swagger';
import { EXPORT_FORMATS } from './export-model';

/** OpenAPI pieces of the export and download routes (spec §4.4 rules 8-9, D32, D48). */

export const EXPORT_BODY_SCHEMA: SchemaObject = {
  type: 'object',
  required: ['format'],
  additionalProperties: false,
  properties: {
    format: { type: 'string', enum: [...EXPORT_FORMATS], example: 'csv' },
    filters: {
      type: 'array',
      description: 'As the data route’s `filters` (after the configured default filters)',
      items: {
        type: 'object',
        required: ['fieldCode', 'operator'],
        properties: {
          fieldCode: { type: 'string' },
          operator: { type: 'string' },
          value: { description: 'Absent for is_null / is_not_null; [from, to] for between' },
        },
      },
    },
    sort: {
      type: 'array',
      description: 'As the data route’s `sort`; else the configured default sort',
      items: {
        type: 'object',
        required: ['fieldCode'],
        properties: { fieldCode: { type: 'string' }, direction: { type: 'string', enum: ['asc', 'desc'] } },
      },
    },
    search: { type: 'string', description: 'Over the columns marked searchable' },
  },
  example: {
    format: 'excel',
    filters: [{ fieldCode: 'tier', operator: 'equals', value: 'gold' }],
    sort: [{ fieldCode: 'credit_limit', direction: 'desc' }],
  },
};

export const EXPORT_ANSWER_SCHEMA: SchemaObject = {
  type: 'object',
  properties: {
    success: { type: 'boolean', example: true },
    data: {
      type: 'object',
      properties: {
        filename: { type: 'string', example: 'customers_2026-01-05.xlsx' },
        downloadUrl: {
          type: 'string',
          example: '/api/v1/downloads/q3v0cXlS1i8aQ3kE0nqKJ5x7sV8b2a9yXo0Wm4r6T1c',
          description: 'GET it with the same tenant and a token, within EXPORT_TTL_S (default 3600 s)',
        },
      },
    },
    meta: {
      type: 'object',
      properties: { timestamp: { type: 'string' }, requestId: { type: 'string' } },
    },
  },
};

export const DOWNLOAD_CONTENT = {
  'text/csv': { schema: { type: 'string', format: 'binary' } },
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': {
    schema: { type: 'string', format: 'binary' },
  },
  'application/pdf': { schema: { type: 'string', format: 'binary' } },
};
