import type { SchemaObject } from '@nestjs/swagger';
import { RECORD_EXAMPLE, RECORD_SCHEMA, successSchema } from './entity.api-docs';

/** OpenAPI pieces of record history and restore (D56). */

const AT = { type: 'string', format: 'date-time', example: '2026-11-23T05:03:25.085Z' } as const;

const BY_SCHEMA: SchemaObject = {
  type: 'object',
  required: ['id', 'email'],
  description: 'Who made the change (email null on entries written before history existed)',
  properties: {
    id: { type: 'integer', nullable: true, example: 3 },
    email: { type: 'string', nullable: true, example: 'admin@acme.example' },
  },
};

const ACTION_SCHEMA: SchemaObject = {
  type: 'string',
  enum: ['created', 'updated', 'deleted', 'restored'],
  example: 'updated',
};

/** Any JSON value, null included: the field's value as a read shows it. */
const VALUE: SchemaObject = {
  description: 'A field value as a read shows it (masked where the profile masks it); null when unset',
};

export const HISTORY_ENTRY_SCHEMA: SchemaObject = {
  type: 'object',
  required: ['version', 'action', 'at', 'by', 'changes'],
  properties: {
    version: { type: 'integer', minimum: 1, example: 4 },
    action: ACTION_SCHEMA,
    at: AT,
    by: BY_SCHEMA,
    changes: {
      type: 'array',
      description: 'The fields the change touched that the caller may see; empty on a delete',
      items: {
        type: 'object',
        required: ['field', 'before', 'after'],
        properties: { field: { type: 'string', example: 'credit_limit' }, before: VALUE, after: VALUE },
      },
    },
  },
};

export const HISTORY_PAGE_SCHEMA = successSchema({
  type: 'object',
  required: ['entries', 'total', 'limit', 'skip'],
  properties: {
    entries: { type: 'array', items: HISTORY_ENTRY_SCHEMA },
    total: { type: 'integer', description: 'Entries the record has', example: 4 },
    limit: { type: 'integer', example: 50 },
    skip: { type: 'integer', example: 0 },
  },
  example: {
    entries: [
      {
        version: 2,
        action: 'updated',
        at: '2026-11-23T05:03:25.085Z',
        by: { id: 3, email: 'admin@acme.example' },
        changes: [{ field: 'credit_limit', before: 3000, after: 5000 }],
      },
    ],
    total: 2,
    limit: 50,
    skip: 0,
  },
});

const RECORD_VALUES_SCHEMA: SchemaObject = {
  type: 'object',
  description: 'The record’s fields as they were, visible under the profile and masked as it says',
  additionalProperties: true,
  example: { ...RECORD_EXAMPLE, lastModified: undefined },
};

export const RECORD_AT_VERSION_SCHEMA = successSchema({
  type: 'object',
  required: ['version', 'action', 'at', 'by', 'deleted', 'record'],
  properties: {
    version: { type: 'integer', minimum: 1, example: 2 },
    action: ACTION_SCHEMA,
    at: AT,
    by: BY_SCHEMA,
    deleted: {
      type: 'boolean',
      description: 'Whether the record was deleted as of that version',
      example: false,
    },
    record: RECORD_VALUES_SCHEMA,
  },
});

export const RESTORE_INPUT_SCHEMA: SchemaObject = {
  oneOf: [
    {
      type: 'object',
      required: ['version'],
      additionalProperties: false,
      properties: {
        version: { type: 'integer', minimum: 1, description: 'The version whose values are written back' },
        lastModified: {
          type: 'string',
          format: 'date-time',
          nullable: true,
          description: 'The record’s token as read (or If-Match)',
        },
      },
    },
    {
      type: 'object',
      required: ['undelete'],
      additionalProperties: false,
      properties: {
        undelete: {
          type: 'boolean',
          enum: [true],
          description: 'Bring back the soft-deleted record and what its cascade deleted with it',
        },
      },
    },
  ],
  example: { version: 2, lastModified: '2026-11-23T05:03:25.085Z' },
};

export const RESTORE_RESULT_SCHEMA = successSchema({
  type: 'object',
  required: ['record'],
  properties: {
    record: RECORD_SCHEMA,
    restoredVersion: {
      type: 'integer',
      description: 'The version written back (a version restore)',
      example: 2,
    },
    skipped: {
      type: 'array',
      items: { type: 'string' },
      description: 'Visible fields of that version the caller cannot write; left as they are',
      example: ['email'],
    },
    undeleted: {
      type: 'array',
      description: 'Every row an undelete brought back: the record first, then its cascade',
      items: {
        type: 'object',
        required: ['entity', 'id'],
        properties: { entity: { type: 'string', example: 'orders' }, id: { type: 'integer', example: 12 } },
      },
    },
  },
});
