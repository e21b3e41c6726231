import { applyDecorators } from '@nestjs/common';
import {
  ApiHeader,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiResponse,
  type SchemaObject,
} from '@nestjs/swagger';
import { ApiErrors } from '../common/http/api-docs';
import { DEMO_NAVIGATIONS, DEMO_PAGES, DEMO_VALUE_SETS } from '../database/seed/demo-data';
import type { ConfigKind } from './config-kinds';

/** OpenAPI pieces of the configuration routes (D41, D50), with examples from the demo data set. */

const META: SchemaObject = {
  type: 'object',
  properties: { timestamp: { type: 'string' }, requestId: { type: 'string' } },
};

const VERSION: SchemaObject = {
  type: 'string',
  description:
    'A hash of the row (id, last-modified, content): changes whenever the row changes; the ETag without quotes',
  example: 'q9dF2lJwQxk0b7Rr1mZc3A',
};

const [page] = DEMO_PAGES;
const [navigation] = DEMO_NAVIGATIONS;
const [valueSet] = DEMO_VALUE_SETS;

const DATA: Record<ConfigKind, SchemaObject> = {
  page: {
    type: 'object',
    properties: {
      code: { type: 'string', example: page.code },
      name: { type: 'string', example: page.name },
      type: {
        type: 'string',
        nullable: true,
        enum: ['form', 'dashboard', 'report', 'content'],
        example: page.type,
      },
      objectCode: {
        type: 'string',
        nullable: true,
        description: 'pgc_object_code: the entity the page reads and writes',
        example: page.objectCode,
      },
      schema: {
        type: 'object',
        additionalProperties: true,
        description:
          'pgc_schema parsed (spec §2.7): sections[] of {name, fields[]}, each field with fieldCode, fieldName, ' +
          'fieldType, isRequired, validation and options[] of {value, label}',
        example: page.schema,
      },
      version: VERSION,
    },
  },
  navigation: {
    type: 'object',
    properties: {
      code: { type: 'string', example: navigation.code },
      name: {
        type: 'string',
        description: 'nav_add_dtls.name when set, else the code (the table has no name column)',
        example: navigation.code,
      },
      structure: {
        type: 'object',
        additionalProperties: true,
        description: 'nav_structure parsed (spec §2.10): the menu hierarchy of pages, workflows, dataviews',
        example: navigation.structure,
      },
      version: VERSION,
    },
  },
  valueSet: {
    type: 'object',
    properties: {
      code: { type: 'string', example: valueSet.code },
      name: { type: 'string', description: 'vs_description, else the code', example: valueSet.description },
      values: {
        type: 'array',
        description: 'vs_values parsed (spec §2.10)',
        items: {
          type: 'object',
          properties: {
            code: { type: 'string' },
            label: { type: 'string' },
            description: { type: 'string' },
          },
        },
        example: valueSet.values,
      },
      version: VERSION,
    },
  },
};

const SUMMARY: Record<ConfigKind, { operationId: string; summary: string; example: string }> = {
  page: {
    operationId: 'getPageConfig',
    summary: 'Page configuration (app_page_configs): the tenant’s row over the system row, pgc_schema parsed',
    example: page.code,
  },
  navigation: {
    operationId: 'getNavigationConfig',
    summary:
      'Navigation (app_navigation_configs): the tenant’s row over the system row, nav_structure parsed',
    example: navigation.code,
  },
  valueSet: {
    operationId: 'getValueSet',
    summary: 'Value set (app_value_sets): the tenant’s row over the system row, vs_values parsed',
    example: valueSet.code,
  },
};

/** Operation, path parameter, conditional-request header, answers and errors of one configuration route. */
export function ApiConfigRoute(kind: ConfigKind): MethodDecorator {
  const s = SUMMARY[kind];
  return applyDecorators(
    ApiOperation({ operationId: s.operationId, summary: s.summary }),
    ApiParam({
      name: 'code',
      schema: { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,100}$', example: s.example },
      description: 'Compared exactly (case and trailing spaces count) on every database',
    }),
    ApiHeader({
      name: 'If-None-Match',
      required: false,
      description: 'The ETag of a copy held; 304 without a body when it is current',
    }),
    ApiOkResponse({
      description: 'With `ETag: "<version>"` and `Cache-Control: private, no-cache`',
      schema: {
        type: 'object',
        properties: { success: { type: 'boolean', example: true }, data: DATA[kind], meta: META },
      },
    }),
    ApiResponse({ status: 304, description: 'If-None-Match names the current ETag (or is *)' }),
    ApiErrors('VALIDATION_ERROR', 'UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND', 'RATE_LIMITED'),
  );
}
