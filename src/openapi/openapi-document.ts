import type { OpenAPIObject, OperationObject, ParameterObject, ResponseObject } from '@nestjs/swagger';
import { DocumentBuilder } from '@nestjs/swagger';
import {
  BEARER_SCHEME,
  byStatus,
  errorExamples,
  errorResponse,
  RATE_LIMIT_REMAINING_HEADER,
  REQUEST_ID_HEADER,
  TENANT_HEADER_SCHEME,
  TICKET_SCHEME,
} from '../common/http/api-docs';
import { codeForStatus, ErrorCode } from '../common/errors/error-codes';
import { withoutPrefilledExamples } from './parameter-examples';

const ERROR_ENVELOPE_REF = '#/components/schemas/ErrorEnvelopeDto';

/** Tags per module, in the order Swagger UI shows them. */
export const MODULE_TAGS = [
  { name: 'auth', description: 'Tenant login screen, sign-in, sign-up, sign-out, profile (spec §4.1)' },
  {
    name: 'entities',
    description:
      'Generic CRUD by entity code (spec §4.3). The registry’s entities also have typed paths, tagged by entity code',
  },
  { name: 'dataviews', description: 'Grid configuration, data, export and download (spec §4.4)' },
  { name: 'workflows', description: 'Workflow definitions and instances' },
  { name: 'config', description: 'SPA configuration: pages, navigation, value sets' },
  { name: 'cache', description: 'Profile catalog and cache administration (spec §4.5)' },
  { name: 'health', description: 'Probes and metrics; no tenant, no token (spec §4.6)' },
];

export const DOCUMENT_DESCRIPTION = [
  'Multi-tenant, configuration-driven backend.',
  '',
  '**Authorisation.** Tenant-scoped routes need the encrypted `x-tenant-id` header (scheme `tenant`); ' +
    'protected routes need it **and** a Bearer JWT (scheme `bearer`) from `POST /api/v1/auth/signin`. ' +
    'Probes and `/metrics` need neither. Through the development tenant proxy (`npm run proxy`, then ' +
    '`http://acme.localhost:8080/api-docs`) the proxy adds the tenant header itself: only the token is needed.',
  '',
  '**Envelopes.** Success bodies are `{success: true, data, meta: {timestamp, requestId}}`; errors ' +
    '`{success: false, message, error: {code, message, details}, meta}`, with the codes of each status ' +
    'shown as examples. Every answer carries `x-request-id`.',
  '',
  '**Concurrency.** Reads answer `lastModified` and `ETag`; a PUT sends `lastModified` back (or `If-Match`); ' +
    'a stale one answers 409 CONFLICT.',
].join('\n');

/** The document's frame: info, servers, security schemes, tags. */
export function documentConfig(): Omit<OpenAPIObject, 'paths'> {
  return new DocumentBuilder()
    .setTitle('Multi-tenant configuration-driven backend')
    .setDescription(DOCUMENT_DESCRIPTION)
    .setVersion('1')
    .setLicense('UNLICENSED (proprietary)', 'https://spdx.org/licenses/')
    .addServer('/', 'This service (or the tenant proxy in front of it)')
    .addBearerAuth(
      {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'JWT',
        description: 'The token of POST /api/v1/auth/signin',
      },
      BEARER_SCHEME,
    )
    .addApiKey(
      {
        type: 'apiKey',
        in: 'header',
        name: 'x-tenant-id',
        description:
          'Encrypted tenant header (spec §2.11): `npm run tenant-header -- <tenant id>`, or added by the tenant proxy',
      },
      TENANT_HEADER_SCHEME,
    )
    .addApiKey(
      {
        type: 'apiKey',
        in: 'query',
        name: 'ticket',
        description:
          'A single-use ticket of POST /api/v1/changes/tickets (60 s), accepted by the changes streams instead of both other schemes (D55)',
      },
      TICKET_SCHEME,
    )
    .build();
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const;

/** Every operation of the document with its path and method. */
export function operationsOf(
  doc: OpenAPIObject,
): Array<{ path: string; method: string; op: OperationObject }> {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m]).map((method) => ({ path, method, op: item[method] as OperationObject })),
  );
}

/** Stable ids where one handler serves two paths (Nest names them `Controller_handler[i]`). */
const PATH_OPERATION_IDS: Record<string, string> = {
  'get /api/v1/health': 'getHealthV1',
};

function mergeErrors(op: OperationObject, codes: ErrorCode[]): void {
  for (const [status, group] of byStatus(codes)) {
    const key = String(status);
    const existing = op.responses[key] as ResponseObject | undefined;
    if (!existing) {
      op.responses[key] = errorResponse(status, group);
      continue;
    }
    const media = existing.content?.['application/json'];
    if (!media) continue;
    const examples = (media.examples ??= {});
    for (const code of group) {
      if (Object.keys(examples).some((k) => k === code || k.startsWith(`${code}_`))) continue;
      Object.assign(examples, errorExamples(code));
      existing.description = `${existing.description}; ${errorResponse(status, [code]).description}`;
    }
  }
}

/**
 * The document as the service serves it: @nestjs/swagger's scan finished with what follows from each
 * route's kind, so that no controller has to repeat it:
 * - operation ids stable where one handler has two paths; security deduplicated, `[]` on probes;
 * - the error codes of the route's kind: the tenant header's 400/403/404 on tenant routes, 401 and
 *   the tenant rate limit (429) on protected routes, the address limit (429) on public ones, 413/415
 *   on bodies; error bodies are JSON whatever the success media type;
 * - `x-request-id` on every answer, `x-ratelimit-remaining` on protected successes, ETag where
 *   If-None-Match applies;
 * - no parameter example that Swagger UI would send as a value (parameter-examples.ts);
 * - a binary body that is also taken as `multipart/form-data` is, in that media type, the form of
 *   one binary part `file` (an import's file, D53).
 */
export function finishDocument(doc: OpenAPIObject): OpenAPIObject {
  doc.tags = [...MODULE_TAGS];
  for (const { path, method, op } of operationsOf(doc)) {
    const fixedId = PATH_OPERATION_IDS[`${method} ${path}`];
    if (fixedId) op.operationId = fixedId;
    multipartFilePart(op);

    // One requirement object per distinct set of schemes (class and method decorators both add one).
    const seen = new Set<string>();
    op.security = (op.security ?? []).filter((s) => {
      const key = Object.keys(s).sort().join('+');
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
    const schemes = new Set(op.security.flatMap((s) => Object.keys(s)));
    const isProtected = schemes.has(BEARER_SCHEME);
    const isTenant = schemes.has(TENANT_HEADER_SCHEME);

    const codes: ErrorCode[] = [];
    if (isTenant) codes.push('VALIDATION_ERROR', 'FORBIDDEN', 'NOT_FOUND');
    if (isProtected)
      codes.push(
        'UNAUTHORIZED',
        'TOKEN_INVALID',
        'TOKEN_EXPIRED',
        'TOKEN_REVOKED',
        'TENANT_MISMATCH',
        'RATE_LIMITED',
      );
    else if (isTenant) codes.push('RATE_LIMITED');
    // Every method that may carry a body has it read (and refused) before the route, documented or not.
    if (op.requestBody || !['get', 'head'].includes(method))
      codes.push('VALIDATION_ERROR', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE');
    // Node refuses a head over maxHeaderSize before any route, in the envelope too (client-errors.hook.ts).
    if (!Object.keys(op.responses).some((s) => s.startsWith('4')) || !isTenant)
      codes.push('HEADERS_TOO_LARGE');
    mergeErrors(op, codes);
    if (isTenant) {
      const r429 = op.responses['429'] as ResponseObject | undefined;
      const examples = r429?.content?.['application/json']?.examples;
      if (examples && !isProtected) {
        examples.RATE_LIMITED = {
          summary: 'RATE_LIMITED: too many requests from this address (public routes)',
          value: {
            ...(examples.RATE_LIMITED as { value: Record<string, unknown> }).value,
            message: 'Too many requests from this address; try again later',
            error: {
              code: 'RATE_LIMITED',
              message: 'Too many requests from this address; try again later',
              details: null,
            },
          },
        };
      }
    }

    const conditional = ((op.parameters ?? []) as ParameterObject[]).some(
      (p) => p.in === 'header' && p.name.toLowerCase() === 'if-none-match',
    );
    for (const [status, response] of Object.entries(op.responses) as Array<[string, ResponseObject]>) {
      const headers = (response.headers ??= {});
      headers['x-request-id'] = REQUEST_ID_HEADER;
      const code = Number(status);
      if (code >= 400 && response.content) {
        // Errors are JSON envelopes even where the success answer is a file or text (@ApiProduces).
        const json = response.content['application/json'] ?? Object.values(response.content)[0];
        response.content = { 'application/json': json };
        const envelope = (json.schema as { $ref?: string } | undefined)?.$ref === ERROR_ENVELOPE_REF;
        if (envelope && !json.examples) json.examples = errorExamples(codeForStatus(code));
      }
      if (code < 400 && isProtected) headers['x-ratelimit-remaining'] = RATE_LIMIT_REMAINING_HEADER;
      if (conditional && (code === 200 || code === 304))
        headers.ETag = {
          description:
            'The entity tag of the answer; send it as If-None-Match to get 304 while it is current',
          schema: { type: 'string', example: '"2026-11-23T05:03:25.085Z"' },
        };
    }
  }
  return withoutPrefilledExamples(doc);
}

/** The `multipart/form-data` media type of a binary body: a form whose part `file` is the file. */
function multipartFilePart(op: OperationObject): void {
  const body = op.requestBody as { content?: Record<string, { schema?: unknown }> } | undefined;
  const form = body?.content?.['multipart/form-data'];
  const schema = form?.schema as { type?: string; format?: string } | undefined;
  if (!form || schema?.type !== 'string' || schema.format !== 'binary') return;
  form.schema = {
    type: 'object',
    required: ['file'],
    properties: { file: { type: 'string', format: 'binary', description: 'the file (CSV or XLSX)' } },
  };
}
