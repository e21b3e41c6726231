import { applyDecorators } from '@nestjs/common';
import { ApiParam, ApiQuery, getSchemaPath, type SchemaObject } from '@nestjs/swagger';
import { MetaDto } from '../common/http/api-docs';

/**
 * OpenAPI pieces of the generic entity routes (spec §4.3), with examples from the demo data set.
 * The per-entity paths (`/api/v1/customers`…) with typed records are generated from the registry
 * by src/openapi/entity-document.ts; these describe the generic `{entity_code}` routes.
 */

export const RECORD_EXAMPLE = {
  id: 1,
  name: 'Alice Anderson',
  email: 'customer1@acme.example',
  phone: '***********0101',
  tier: 'bronze',
  credit_limit: 3000,
  lastModified: '2026-11-23T05:03:25.085Z',
};

/** A record as reads answer it: its visible fields (masked as the profile says) and lastModified (D42). */
export const RECORD_SCHEMA: SchemaObject = {
  type: 'object',
  description:
    'The record’s fields visible under the profile (masked as it says) and its concurrency token lastModified (D42). ' +
    'Per-entity schemas (e.g. Customer) list the fields.',
  properties: {
    id: { type: 'integer', readOnly: true, example: 1 },
    lastModified: {
      type: 'string',
      format: 'date-time',
      nullable: true,
      readOnly: true,
      description: 'The concurrency token; send it back on PUT (or as If-Match)',
    },
  },
  additionalProperties: true,
  example: RECORD_EXAMPLE,
};

/** A create or update body: field values; on PUT also lastModified (or the If-Match header, D24). */
export const RECORD_INPUT_SCHEMA: SchemaObject = {
  type: 'object',
  description: 'Field values by name. PUT: the changed fields plus lastModified as read (or If-Match)',
  additionalProperties: true,
  example: { name: 'Alice Anderson', email: 'customer1@acme.example', tier: 'gold', credit_limit: 5000 },
};

/** `{records, total, limit, skip, meta}` (spec §2.15) around a record schema. */
export function listResultSchema(record: SchemaObject): SchemaObject {
  return {
    type: 'object',
    required: ['records', 'total', 'limit', 'skip', 'meta'],
    properties: {
      records: { type: 'array', items: record },
      total: { type: 'integer', description: 'Records matching the filters', example: 50 },
      limit: { type: 'integer', example: 100 },
      skip: { type: 'integer', example: 0 },
      meta: {
        type: 'object',
        properties: {
          entityCode: { type: 'string', example: 'customers' },
          retrievedAt: { type: 'string', format: 'date-time' },
        },
      },
    },
  };
}

/** A success body around `data`, as an example. */
export function successExample(data: unknown): object {
  return {
    success: true,
    data,
    meta: { timestamp: '2026-11-23T05:03:25.509Z', requestId: 'acc0dcd5-b6cc-4916-acb6-1246776d38a2' },
  };
}

/** `{success, data, meta}` (D16) with `extras` beside data (always sent). */
export function successSchema(data: SchemaObject, extras: Record<string, SchemaObject> = {}): SchemaObject {
  return {
    type: 'object',
    required: ['success', 'data', ...Object.keys(extras), 'meta'],
    properties: {
      success: { type: 'boolean', enum: [true], example: true },
      data,
      ...extras,
      meta: { $ref: getSchemaPath(MetaDto) },
    },
  };
}

export const LIST_SCHEMA = successSchema(listResultSchema(RECORD_SCHEMA));

export const ARRAY_SCHEMA = successSchema(
  { type: 'array', items: RECORD_SCHEMA },
  {
    count: { type: 'integer', description: 'Records in this answer', example: 2 },
    total: { type: 'integer', description: 'Records matching the query', example: 50 },
  },
);

export function deleteSchema(): SchemaObject {
  return successSchema(
    {
      type: 'object',
      required: ['success', 'deletedAt'],
      properties: {
        success: { type: 'boolean', example: true },
        deletedAt: { type: 'string', format: 'date-time', example: '2026-11-23T05:10:00.000Z' },
      },
    },
    { deletedAt: { type: 'string', format: 'date-time', example: '2026-11-23T05:10:00.000Z' } },
  );
}

/** The list parameters of spec §4.3 style 2, as parseListQuery (list-query.ts) reads them. */
export const LIST_PARAMETERS = [
  {
    name: 'filters',
    in: 'query' as const,
    required: false,
    style: 'deepObject' as const,
    explode: true,
    description:
      'Equality filters, `filters[<field>]=<value>` (e.g. `filters[tier]=gold`); several are ANDed. Only ' +
      'fields the profile lets the caller see, and only when its queryPolicy.allowAdhocFilters allows',
    schema: { type: 'object' as const, additionalProperties: { type: 'string' as const } },
    example: { tier: 'gold' },
  },
  {
    name: 'limit',
    in: 'query' as const,
    required: false,
    description: 'Page size; default the profile’s defaultPageSize (100), at most its maxPageSize (500)',
    schema: { type: 'integer' as const, minimum: 1, maximum: 500, example: 25 },
  },
  {
    name: 'skip',
    in: 'query' as const,
    required: false,
    description: 'Records to skip (offset)',
    schema: { type: 'integer' as const, minimum: 0, default: 0, example: 0 },
  },
  {
    name: 'sortBy',
    in: 'query' as const,
    required: false,
    description: 'A visible field name; the key always ends the sort',
    schema: { type: 'string' as const, example: 'name' },
  },
  {
    name: 'sortOrder',
    in: 'query' as const,
    required: false,
    description: 'asc or desc, in any case (DESC, Desc…)',
    schema: { type: 'string' as const, pattern: '^([Aa][Ss][Cc]|[Dd][Ee][Ss][Cc])$', default: 'asc' },
  },
];

/** Decorators of the list parameters. */
export function ApiListQuery(): MethodDecorator {
  return applyDecorators(
    ...LIST_PARAMETERS.map(({ in: _in, ...p }) => ApiQuery(p as Parameters<typeof ApiQuery>[0])),
  );
}

export const ApiEntityCodeParam = (): MethodDecorator =>
  ApiParam({
    name: 'entity_code',
    description: 'Entity code of the object registry (obj_code)',
    schema: { type: 'string', pattern: '^[A-Za-z0-9_]{1,100}$', example: 'customers' },
  });

export const ApiRecordIdParam = (): MethodDecorator =>
  ApiParam({
    name: 'id',
    description: 'The record’s key',
    schema: { type: 'integer', minimum: 1, example: 1 },
  });

export const TEN_ID_PARAMETER = {
  name: 'ten_id',
  required: false,
  description: 'Must be the tenant of the token (D28); 403 otherwise',
  schema: { type: 'string' as const, example: '1' },
};

/** D51's body: one operation over records (create, update) or ids (delete). */
export const BULK_INPUT_SCHEMA: SchemaObject = {
  type: 'object',
  required: ['operation'],
  additionalProperties: false,
  description:
    'create takes records of field values; update takes records of {id, lastModified, …fields} (each row its own ' +
    'token, D24); delete takes ids (and cascade, D25). At most BULK_MAX_ROWS rows (413 above)',
  properties: {
    operation: { type: 'string', enum: ['create', 'update', 'delete'] },
    records: {
      type: 'array',
      minItems: 1,
      items: { type: 'object', additionalProperties: true },
      description: 'create: field values by name; update: id and lastModified plus the fields to change',
    },
    ids: {
      type: 'array',
      minItems: 1,
      items: { oneOf: [{ type: 'integer' }, { type: 'string' }] },
      description: 'delete: the record ids',
    },
    cascade: { type: 'boolean', description: 'delete: also soft-delete dependents (D25)' },
    allOrNone: {
      type: 'boolean',
      description: 'One transaction: when any row fails nothing is written and the answer is that row’s 4xx',
    },
  },
  example: {
    operation: 'update',
    records: [
      { id: 1, lastModified: '2026-11-23T05:03:25.085Z', tier: 'gold' },
      { id: 2, lastModified: '2026-11-23T05:03:25.085Z', tier: 'gold' },
    ],
  },
};

/** One row's result: the status (and error) the single-record route would have answered. */
export const BULK_ROW_RESULT_SCHEMA: SchemaObject = {
  type: 'object',
  required: ['index', 'id', 'status'],
  properties: {
    index: { type: 'integer', minimum: 0, description: 'The row’s position in records or ids' },
    id: {
      type: 'integer',
      nullable: true,
      description: 'The record’s id (a new one for a create); null if none',
    },
    status: {
      type: 'integer',
      enum: [200, 201, 202, 400, 403, 404, 409],
      description: 'The single route’s status (202: a workflow action started the row’s instance)',
    },
    error: {
      type: 'object',
      required: ['code', 'message', 'details'],
      properties: {
        code: { type: 'string', example: 'CONFLICT' },
        message: { type: 'string' },
        details: {
          description: 'The single route’s error details (field errors, the current lastModified…) or null',
        },
      },
    },
    lastModified: { type: 'string', format: 'date-time', description: 'The written record’s new token' },
    instanceId: { type: 'integer', description: 'A workflow action’s row (D52): the instance it started' },
  },
};

export const BULK_RESULT_SCHEMA: SchemaObject = successSchema({
  type: 'object',
  required: ['results', 'succeeded', 'failed'],
  properties: {
    results: { type: 'array', items: BULK_ROW_RESULT_SCHEMA },
    succeeded: { type: 'integer', minimum: 0, example: 2 },
    failed: { type: 'integer', minimum: 0, example: 0 },
  },
  example: {
    results: [
      { index: 0, id: 1, status: 200, lastModified: '2026-11-23T05:10:00.001Z' },
      {
        index: 1,
        id: 2,
        status: 409,
        error: {
          code: 'CONFLICT',
          message: 'customers 2 was changed by someone else; reload it and retry',
          details: { lastModified: '2026-11-23T05:09:00.000Z' },
        },
      },
    ],
    succeeded: 1,
    failed: 1,
  },
});
