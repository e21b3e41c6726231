import { applyDecorators } from '@nestjs/common';
import { ApiQuery, type SchemaObject } from '@nestjs/swagger';

/** OpenAPI pieces of the dataview routes (spec §4.4), with examples from the demo grids. */

const META: SchemaObject = {
  type: 'object',
  required: ['timestamp', 'requestId'],
  properties: { timestamp: { type: 'string' }, requestId: { type: 'string' } },
};

export const CONFIG_SCHEMA: SchemaObject = {
  type: 'object',
  required: ['success', 'data', 'meta'],
  properties: {
    success: { type: 'boolean', enum: [true], example: true },
    data: {
      type: 'object',
      required: ['dvc_code', 'dvc_description', 'config'],
      properties: {
        dvc_code: { type: 'string', example: 'customers_grid' },
        dvc_description: { type: 'string', nullable: true, example: 'Customers' },
        config: {
          type: 'object',
          additionalProperties: true,
          description:
            'dvc_config parsed (spec §2.9.1): source, display, columns, filters, sorting, grouping, …',
        },
      },
    },
    meta: META,
  },
};

export const ROW: SchemaObject = {
  type: 'object',
  title: 'DataviewRow',
  required: ['lastModified'],
  properties: {
    lastModified: {
      type: 'string',
      format: 'date-time',
      nullable: true,
      description: 'The concurrency token of the row’s record (D42)',
    },
  },
  additionalProperties: true,
  description:
    'The key field, every column with a fieldCode the profile lets the caller see (masked as reads mask), ' +
    'and lastModified (D42), so a row can be saved with PUT /api/v1/{entity}/{id}',
  example: {
    id: 4,
    name: 'Customer 4',
    email: 'customer4@acme.example',
    tier: 'bronze',
    credit_limit: 4000,
    lastModified: '2026-01-05T10:00:00.123Z',
  },
};

const GROUP: SchemaObject = {
  type: 'object',
  title: 'DataviewGroup',
  required: ['key', 'count', 'aggregates'],
  additionalProperties: false,
  properties: {
    key: { description: 'The group field’s value; null for the rows where it is NULL', example: 'gold' },
    count: { type: 'integer', example: 10 },
    aggregates: { type: 'object', additionalProperties: true, example: { credit_limit: 61000 } },
  },
};

export const DATA_SCHEMA: SchemaObject = {
  type: 'object',
  required: ['success', 'data', 'meta'],
  properties: {
    success: { type: 'boolean', enum: [true], example: true },
    data: {
      description:
        'The rows of the page (each with lastModified); with groupBy (and no groupKey) the groups ' +
        '{key, count, aggregates}, ordered by key. anyOf, not oneOf: an empty page is both.',
      anyOf: [
        { type: 'array', items: ROW },
        { type: 'array', items: GROUP },
      ],
    },
    pagination: {
      description:
        'Offset dataviews: {page, pageSize, total}; cursor dataviews: {pageSize, nextCursor} (null on the last page). ' +
        'Absent for groups.',
      anyOf: [
        {
          type: 'object',
          required: ['page', 'pageSize', 'total'],
          properties: {
            page: { type: 'integer', example: 0 },
            pageSize: { type: 'integer', example: 25 },
            total: { type: 'integer', example: 50 },
          },
        },
        {
          type: 'object',
          required: ['pageSize', 'nextCursor'],
          properties: {
            pageSize: { type: 'integer', example: 25 },
            nextCursor: {
              type: 'string',
              nullable: true,
              example: 'eyJ2IjoxLCJwIjpbWyIyMDI2LTAzLTAxIl0sOTZdfQ.q3J…',
            },
          },
        },
      ],
    },
    aggregates: {
      type: 'object',
      additionalProperties: true,
      description: 'The columns’ aggregateFunction (sum, avg, min, max, count) over the whole filtered set',
      example: { credit_limit: 187500 },
    },
    meta: META,
  },
};

const FILTERS_EXAMPLE = JSON.stringify([
  { fieldCode: 'tier', operator: 'in', value: ['gold', 'silver'] },
  { fieldCode: 'credit_limit', operator: 'between', value: [1000, 5000] },
]);
const SORT_EXAMPLE = JSON.stringify([{ fieldCode: 'credit_limit', direction: 'desc' }]);

/** The query parameters of the data route. */
export function ApiGridQuery(): MethodDecorator {
  return applyDecorators(
    ApiQuery({
      name: 'page',
      required: false,
      type: 'integer',
      minimum: 0,
      description: 'Offset dataviews: zero-based page (offset = page * pageSize)',
      example: 0,
    }),
    ApiQuery({
      name: 'pageSize',
      required: false,
      type: 'integer',
      minimum: 1,
      description: 'Default display.pageSize; at most the profile’s maxPageSize and source.maxRows',
      example: 25,
    }),
    ApiQuery({
      name: 'filters',
      required: false,
      type: String,
      description:
        'JSON array of {fieldCode, operator, value}, applied after the configured defaultFilters. Operators: ' +
        'equals, not_equals, in, not_in, is_null, is_not_null (all columns); contains, starts_with, ends_with ' +
        '(text); greater_than, less_than, between [from, to] (numeric, date). Only isFilterable columns. ' +
        `orders_grid: ${JSON.stringify([{ fieldCode: 'ordered_at', operator: 'between', value: ['2026-01-01', '2026-03-31'] }])}`,
      examples: {
        none: { summary: 'No filter', value: '' },
        customers_grid: {
          summary: 'customers_grid: gold or silver, credit 1000-5000',
          value: FILTERS_EXAMPLE,
        },
        orders_grid: {
          summary: 'orders_grid: ordered in Q1 2026',
          value: JSON.stringify([
            { fieldCode: 'ordered_at', operator: 'between', value: ['2026-01-01', '2026-03-31'] },
          ]),
        },
      },
    }),
    ApiQuery({
      name: 'sort',
      required: false,
      type: String,
      description:
        'JSON array of {fieldCode, direction: asc|desc}, only isSortable columns; default sorting.defaultSort. ' +
        'The primary key always ends the sort.',
      examples: {
        none: { summary: 'The configured defaultSort', value: '' },
        credit_limit_desc: { summary: 'Highest credit limit first', value: SORT_EXAMPLE },
      },
    }),
    ApiQuery({
      name: 'search',
      required: false,
      type: String,
      description: 'Case-blind text searched in the columns marked searchable',
      // Examples, not `example`: Swagger UI fills an `example` in, and these three together ask
      // for a page no one wants; the first of `examples` (empty) is what "Try it out" sends.
      examples: {
        none: { summary: 'No search', value: '' },
        customer1: { summary: 'Names with customer1', value: 'customer1' },
      },
    }),
    ApiQuery({
      name: 'cursor',
      required: false,
      type: String,
      description: 'Cursor dataviews (orders_grid): the nextCursor of the previous page; opaque and signed',
    }),
    ApiQuery({
      name: 'groupBy',
      required: false,
      type: String,
      description: 'A fieldCode of grouping.groupableColumns: data becomes [{key, count, aggregates}]',
      examples: {
        none: { summary: 'No groups', value: '' },
        tier: { summary: 'Groups by tier', value: 'tier' },
      },
    }),
    ApiQuery({
      name: 'groupKey',
      required: false,
      type: String,
      description:
        'With groupBy: the rows of that one group, paged as usual (a JSON scalar, e.g. null, or text)',
      examples: {
        none: { summary: 'All groups', value: '' },
        gold: { summary: 'The gold group', value: 'gold' },
      },
    }),
  );
}
