import { applyDecorators } from '@nestjs/common';
import {
  ApiExtraModels,
  ApiProperty,
  ApiPropertyOptional,
  ApiResponse,
  ApiSecurity,
  getSchemaPath,
} from '@nestjs/swagger';
import type { ExampleObject, HeadersObject, ResponseObject } from '@nestjs/swagger';
import { ERROR_STATUS, ErrorCode } from '../errors/error-codes';

/** Names of the OpenAPI security schemes declared in src/openapi/openapi.setup.ts. */
export const TENANT_HEADER_SCHEME = 'tenant';
export const BEARER_SCHEME = 'bearer';
/** A change-stream ticket in the query (D55), instead of both of the others. */
export const TICKET_SCHEME = 'ticket';

/**
 * Swagger security of a protected route: ONE requirement holding both schemes (the tenant header
 * AND the bearer token). Two requirement objects would mean either/or in OpenAPI.
 */
export const ApiProtected = (): MethodDecorator & ClassDecorator =>
  ApiSecurity({ [BEARER_SCHEME]: [], [TENANT_HEADER_SCHEME]: [] });

/**
 * Swagger security of a route that also accepts `?ticket=` (D55): the tenant header and the token
 * together, or the ticket alone.
 */
export const ApiProtectedOrTicket = (): MethodDecorator & ClassDecorator =>
  applyDecorators(
    ApiSecurity({ [BEARER_SCHEME]: [], [TENANT_HEADER_SCHEME]: [] }),
    ApiSecurity(TICKET_SCHEME),
  );

/** Swagger security of a public route that still needs the tenant header (sign-in, sign-up…). */
export const ApiTenantOnly = (): MethodDecorator & ClassDecorator => ApiSecurity(TENANT_HEADER_SCHEME);

const REQUEST_ID_EXAMPLE = '3f6c1a52-9d1e-4b4f-8f0e-2b1c9c7c1a11';
const TIMESTAMP_EXAMPLE = '2026-11-21T12:00:00.000Z';

/** `x-request-id` (D19): on every answer, the client's own when sane, else a generated UUID. */
export const REQUEST_ID_HEADER = {
  required: true,
  description: 'The request id (D19): the x-request-id sent, when sane, else a generated UUID',
  schema: { type: 'string', example: REQUEST_ID_EXAMPLE },
};
export const RETRY_AFTER_HEADER = {
  required: true,
  description: 'Seconds to wait before retrying',
  schema: { type: 'integer', minimum: 1, example: 5 },
};
/** TenantRateLimitGuard (D39): points left in the tenant's window, on authenticated answers. */
export const RATE_LIMIT_REMAINING_HEADER = {
  description: 'Requests left to the tenant in the current rate-limit window (authenticated routes, D39)',
  schema: { type: 'integer', minimum: 0, example: 999 },
};

export class MetaDto {
  @ApiProperty({ example: TIMESTAMP_EXAMPLE }) timestamp!: string;
  @ApiProperty({ example: REQUEST_ID_EXAMPLE }) requestId!: string;
}

export class FieldErrorDto {
  @ApiProperty({ example: 'email', description: 'The field (body key, query parameter or header)' })
  field!: string;
  @ApiProperty({ example: 'is required' }) error!: string;
}

export class ErrorDetailDto {
  @ApiProperty({ enum: Object.keys(ERROR_STATUS), example: 'NOT_FOUND' }) code!: string;
  @ApiProperty({ example: 'customers 999 not found' }) message!: string;
  @ApiPropertyOptional({
    description:
      'VALIDATION_ERROR: a list of field errors `[{field, error}]` (a missing or bad tenant header: ' +
      '`{"x-tenant-id": reason}`); CONFLICT: `{lastModified}` (stale save) or `{dependentEntities}` ' +
      '(delete without cascade); NOT_READY: the readiness flags; otherwise null',
    anyOf: [
      { type: 'array', items: { $ref: getSchemaPath(FieldErrorDto) }, nullable: true },
      { type: 'object', additionalProperties: true, nullable: true },
    ],
  })
  details!: unknown;
}

/** The error envelope of D17. */
@ApiExtraModels(FieldErrorDto)
export class ErrorEnvelopeDto {
  @ApiProperty({ enum: [false], example: false }) success!: boolean;
  @ApiProperty({
    description: 'Same as error.message (spec §7 simple body)',
    example: 'customers 999 not found',
  })
  message!: string;
  @ApiPropertyOptional({
    description: 'Profile-loader 404 only: the entity code (D17)',
    example: 'customers',
  })
  entityCode?: string;
  @ApiProperty({ type: ErrorDetailDto }) error!: ErrorDetailDto;
  @ApiProperty({ type: MetaDto }) meta!: MetaDto;
}

const DESCRIPTIONS: Record<ErrorCode, string> = {
  VALIDATION_ERROR: 'Bad input (details list the fields)',
  UNAUTHORIZED: 'Token missing',
  TOKEN_INVALID: 'Token invalid, or its user no longer active',
  TOKEN_EXPIRED: 'Token expired',
  TOKEN_REVOKED: 'Token revoked (logout, role change)',
  INVALID_CREDENTIALS: 'E-mail or password wrong',
  FORBIDDEN: 'Authenticated but not allowed (permission, inactive tenant)',
  TENANT_MISMATCH: 'The token belongs to another tenant than the x-tenant-id header',
  FEATURE_DISABLED: 'The feature is disabled for this tenant',
  NOT_FOUND: 'Not found',
  METHOD_NOT_ALLOWED: 'Method not allowed',
  REQUEST_TIMEOUT: 'The request was not complete in time',
  CONFLICT: 'Conflict (stale lastModified, dependents, duplicate unique value)',
  PAYLOAD_TOO_LARGE: 'Body larger than BODY_LIMIT_BYTES',
  URI_TOO_LONG: 'URI too long',
  UNSUPPORTED_MEDIA_TYPE: 'The body is not application/json (UTF-8)',
  RATE_LIMITED: 'Too many requests (Retry-After)',
  HEADERS_TOO_LARGE: 'Request headers too large',
  SERVICE_ERROR: 'Unexpected error (logged; never a raw database error)',
  NOT_IMPLEMENTED: 'The entity’s object or database type cannot serve this operation (D26)',
  NOT_READY: 'Service still starting (readiness gate; Retry-After)',
  DATABASE_UNAVAILABLE: 'The database cannot be reached (Retry-After)',
  OVERLOADED: 'Shedding load under event-loop pressure (Retry-After)',
};

/** A real answer of each code, from the demo data set (message and details as the service sends them). */
const ERROR_SAMPLES: Record<
  ErrorCode,
  Array<{ name?: string; message: string; details?: unknown; extras?: object }>
> = {
  VALIDATION_ERROR: [
    {
      message: 'Validation failed',
      details: [
        { field: 'email', error: 'is required' },
        { field: 'tier', error: 'must be one of the values of customer_tiers' },
      ],
    },
    {
      name: 'VALIDATION_ERROR_TENANT_HEADER',
      message: 'x-tenant-id header is required',
      details: { 'x-tenant-id': 'required' },
    },
  ],
  UNAUTHORIZED: [{ message: 'Authentication required' }],
  TOKEN_INVALID: [{ message: 'Token is invalid' }],
  TOKEN_EXPIRED: [{ message: 'Token has expired' }],
  TOKEN_REVOKED: [{ message: 'Token has been revoked' }],
  INVALID_CREDENTIALS: [{ message: 'Invalid e-mail or password' }],
  FORBIDDEN: [{ message: 'Permission update:entity required' }],
  TENANT_MISMATCH: [{ message: 'Token belongs to another tenant' }],
  FEATURE_DISABLED: [{ message: 'Feature export is disabled for this tenant' }],
  NOT_FOUND: [
    { message: 'customers 999 not found' },
    {
      name: 'NOT_FOUND_ENTITY',
      message: 'Entity invoices not found',
      extras: { entityCode: 'invoices' },
    },
  ],
  METHOD_NOT_ALLOWED: [{ message: 'Method not allowed' }],
  REQUEST_TIMEOUT: [{ message: 'Request timeout' }],
  CONFLICT: [
    {
      message: 'customers 1 was changed by someone else; reload it and retry',
      details: { lastModified: '2026-11-23T05:03:25.085Z' },
    },
    {
      name: 'CONFLICT_DEPENDENTS',
      message: 'customers 1 has dependent records; delete with cascade=true',
      details: { dependentEntities: [{ entity: 'orders', count: 3 }] },
    },
  ],
  PAYLOAD_TOO_LARGE: [{ message: 'Request body is too large' }],
  URI_TOO_LONG: [{ message: 'URI too long' }],
  UNSUPPORTED_MEDIA_TYPE: [
    {
      message: 'Unsupported content type: send the body as application/json (UTF-8)',
      details: [{ field: 'content-type', error: 'must be application/json (charset utf-8 or none)' }],
    },
  ],
  RATE_LIMITED: [{ message: 'Too many requests for this tenant' }],
  HEADERS_TOO_LARGE: [{ message: 'Request headers too large' }],
  SERVICE_ERROR: [{ message: 'Internal error' }],
  NOT_IMPLEMENTED: [{ message: 'reports is a FUNCTION object, which sqlite cannot serve' }],
  NOT_READY: [
    {
      message: 'Service is starting up and not ready yet',
      details: { redis: true, externalDbs: true, cache: false },
    },
  ],
  DATABASE_UNAVAILABLE: [{ message: 'The database is unavailable; try again later' }],
  OVERLOADED: [{ message: 'Service overloaded, retry later' }],
};

/** The error envelope of a code, as an OpenAPI example. */
export function errorExample(code: ErrorCode, sample = ERROR_SAMPLES[code][0]): ExampleObject {
  return {
    summary: `${code}: ${DESCRIPTIONS[code]}`,
    value: {
      success: false,
      message: sample.message,
      ...(sample.extras ?? {}),
      error: { code, message: sample.message, details: sample.details ?? null },
      meta: { timestamp: TIMESTAMP_EXAMPLE, requestId: REQUEST_ID_EXAMPLE },
    },
  };
}

/** Every example of a code, keyed by a stable name (the code, then named variants). */
export function errorExamples(code: ErrorCode): Record<string, ExampleObject> {
  return Object.fromEntries(ERROR_SAMPLES[code].map((s) => [s.name ?? code, errorExample(code, s)]));
}

/** Codes every route may answer: the readiness gate, load shedding, an outage, the unexpected. */
export const ALWAYS_POSSIBLE: readonly ErrorCode[] = [
  'SERVICE_ERROR',
  'NOT_READY',
  'OVERLOADED',
  'DATABASE_UNAVAILABLE',
];

function headersFor(status: number): HeadersObject {
  return {
    'x-request-id': REQUEST_ID_HEADER,
    ...(status === 429 || status === 503 ? { 'Retry-After': RETRY_AFTER_HEADER } : {}),
  };
}

/** The response object of one status answering `codes` (all of that status). */
export function errorResponse(status: number, codes: readonly ErrorCode[]): ResponseObject {
  return {
    description: codes.map((c) => `${c}: ${DESCRIPTIONS[c]}`).join('; '),
    headers: headersFor(status),
    content: {
      'application/json': {
        schema: { $ref: getSchemaPath(ErrorEnvelopeDto) },
        examples: Object.assign({}, ...codes.map((c) => errorExamples(c))) as Record<string, ExampleObject>,
      },
    },
  };
}

/** Codes grouped by their HTTP status. */
export function byStatus(codes: Iterable<ErrorCode>): Map<number, ErrorCode[]> {
  const out = new Map<number, ErrorCode[]>();
  for (const code of new Set(codes))
    out.set(ERROR_STATUS[code], [...(out.get(ERROR_STATUS[code]) ?? []), code]);
  return out;
}

/**
 * Documents error answers with the envelope schema and one example per code. The codes every
 * route may answer (ALWAYS_POSSIBLE) are added here; the ones that follow from the route's kind
 * (401 and the tenant's 429 on protected routes, 413/415 on bodies) by src/openapi/openapi-document.ts.
 */
export function ApiErrors(...codes: ErrorCode[]): MethodDecorator & ClassDecorator {
  return applyDecorators(
    ApiExtraModels(ErrorEnvelopeDto, FieldErrorDto),
    ...[...byStatus([...codes, ...ALWAYS_POSSIBLE]).entries()].map(([status, group]) => {
      const response = errorResponse(status, group);
      return ApiResponse({
        status,
        type: ErrorEnvelopeDto,
        description: response.description,
        headers: response.headers,
        examples: response.content!['application/json'].examples as Record<
          string,
          { summary: string; value: unknown }
        >,
      });
    }),
  );
}

export interface EnvelopeOptions {
  status?: number;
  description?: string;
  /** An example of `data`. */
  example?: unknown;
  headers?: HeadersObject;
}

/** Documents a success answer: the envelope of D16 around `model` as `data`. */
export function ApiEnvelope(
  model: new (...args: never[]) => unknown,
  options: EnvelopeOptions = {},
): MethodDecorator & ClassDecorator {
  return applyDecorators(
    ApiExtraModels(model, MetaDto),
    ApiResponse({
      status: options.status ?? 200,
      description: options.description ?? 'Success envelope (D16)',
      headers: options.headers,
      schema: envelopeSchema({ $ref: getSchemaPath(model) }, options.example),
    }),
  );
}

/** `{success: true, data, meta}` around a `data` schema (D16); `extras` are always sent beside it. */
export function envelopeSchema(data: object, example?: unknown, extras: Record<string, object> = {}): object {
  return {
    type: 'object',
    required: ['success', 'data', ...Object.keys(extras), 'meta'],
    properties: {
      success: { type: 'boolean', enum: [true], example: true },
      data: example === undefined ? data : { ...data, ...('$ref' in data ? {} : { example }) },
      ...extras,
      meta: { $ref: getSchemaPath(MetaDto) },
    },
    ...(example !== undefined
      ? {
          example: {
            success: true,
            data: example,
            meta: { timestamp: TIMESTAMP_EXAMPLE, requestId: REQUEST_ID_EXAMPLE },
          },
        }
      : {}),
  };
}
