import addFormats from 'ajv-formats';
import { OpenAPIBackend, type Document, type Operation } from 'openapi-backend';

/**
 * The service's answers checked against its own OpenAPI document, request and response side
 * (issue 20): the contract an integrator's validating gateway or generated client relies on.
 * Ajv does the schema work through openapi-backend; this file decides what is a violation.
 */

export interface Exchange {
  method: string;
  /** Path and query string as sent. */
  url: string;
  requestHeaders: Record<string, string | string[] | undefined>;
  /** The parsed JSON body, undefined when none was sent (or it could not be parsed). */
  requestBody?: unknown;
  status: number;
  responseHeaders: Record<string, string | string[] | number | undefined>;
  /** The bytes the client got (empty for 304 and HEAD). */
  responseBody: Buffer;
}

export interface Violation {
  side: 'request' | 'response';
  operation: string;
  status: number;
  request: string;
  message: string;
}

interface DocOperation {
  operationId: string;
  method: string;
  path: string;
  pattern: RegExp;
  /** How many segments are literal: the most specific template wins (OpenAPI 3 path matching). */
  literals: number;
  op: Operation;
}

/** Served, but not operations of the API: Swagger UI, the development page, test-only routes. */
const NOT_API = [/^\/api-docs(\/|$)/, /^\/$/, /^\/ui\//, /^\/favicon\.ico$/, /^\/test\//];

function first(value: string | string[] | number | undefined): string | undefined {
  if (Array.isArray(value)) return value[0];
  return value === undefined ? undefined : String(value);
}

function mediaType(value: string | undefined): string {
  return (value ?? '').split(';')[0].trim().toLowerCase();
}

function mediaMatches(actual: string, documented: string): boolean {
  if (documented === '*/*' || documented === actual) return true;
  return documented.endsWith('/*') && actual.startsWith(documented.slice(0, -1));
}

function ajvErrors(
  errors: Array<{ instancePath?: string; message?: string; params?: unknown }> | null | undefined,
): string {
  return (errors ?? [])
    .slice(0, 5)
    .map((e) => `${e.instancePath || '/'} ${e.message ?? ''} ${JSON.stringify(e.params ?? {})}`.trim())
    .join('; ');
}

function compile(path: string): { pattern: RegExp; literals: number } {
  const parts = path.split('/').filter(Boolean);
  const source = parts
    .map((p) => (/^\{[^}]+\}$/.test(p) ? '[^/]+' : p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return { pattern: new RegExp(`^/${source}/?$`), literals: parts.filter((p) => !p.startsWith('{')).length };
}

export class OpenApiContract {
  private constructor(
    private readonly api: OpenAPIBackend,
    private readonly operations: DocOperation[],
  ) {}

  /** The checker of one document (the served /api-docs/json). */
  static async create(document: object): Promise<OpenApiContract> {
    const api = new OpenAPIBackend({
      definition: structuredClone(document) as Document,
      // Validators compile per operation on first use: compiling all of them at once blocks the
      // event loop for seconds, and the app under test then sheds load (503 OVERLOADED). The
      // document's own validity is Redocly's job (npm run lint:openapi).
      quick: true,
      validate: true,
      customizeAjv: (ajv) => {
        addFormats(ajv, { mode: 'full' });
        return ajv;
      },
    });
    await api.init();
    const operations = api.router.getOperations().map((op) => ({
      operationId: op.operationId!,
      method: op.method.toLowerCase(),
      path: op.path,
      op,
      ...compile(op.path),
    }));
    return new OpenApiContract(api, operations);
  }

  /** Every operation and its documented statuses. */
  documented(): Map<string, string[]> {
    return new Map(this.operations.map((o) => [o.operationId, Object.keys(o.op.responses ?? {})]));
  }

  /** `METHOD path` of an operation id. */
  describe(operationId: string): string {
    const o = this.operations.find((x) => x.operationId === operationId);
    return o ? `${o.method.toUpperCase()} ${o.path}` : operationId;
  }

  /**
   * The operations an exchange is an instance of: the most specific path template, and for the
   * typed entity paths (`x-entity-code`) also the generic route that really serves them.
   */
  match(method: string, path: string): DocOperation[] {
    const candidates = this.operations
      .filter((o) => o.method === method.toLowerCase() && o.pattern.test(path))
      // On a tie, the route the router really takes: a static segment of a generic route
      // (`/api/v1/{entity_code}/changes`) beats a typed entity path's parameter (`…/customers/{id}`).
      .sort((a, b) => b.literals - a.literals || typedness(a) - typedness(b));
    if (candidates.length === 0) return [];
    const best = candidates[0];
    if (!(best.op as Record<string, unknown>)['x-entity-code']) return [best];
    return [
      best,
      ...candidates.filter((c) => c.literals < best.literals && c.path.startsWith('/api/v1/{entity_code}')),
    ];
  }

  /** The violations of one exchange and the operations it touched. */
  check(ex: Exchange): { operations: string[]; violations: Violation[] } {
    const [path] = ex.url.split('?');
    const request = `${ex.method} ${ex.url.length > 160 ? `${ex.url.slice(0, 160)}…` : ex.url}`;
    if (NOT_API.some((r) => r.test(path))) return { operations: [], violations: [] };
    const ops = this.match(ex.method, path);
    if (ops.length === 0) {
      // Unknown paths answer the 404 envelope (and 405/414 before routing); anything else is an undocumented route.
      if (ex.status >= 400) return { operations: [], violations: [] };
      return {
        operations: [],
        violations: [
          {
            side: 'response',
            operation: '-',
            status: ex.status,
            request,
            message: 'answered, but no operation of the document matches',
          },
        ],
      };
    }
    const violations: Violation[] = [];
    for (const o of ops) {
      const add = (side: Violation['side'], message: string): void => {
        violations.push({ side, operation: o.operationId, status: ex.status, request, message });
      };
      this.checkResponse(o, ex, add);
      // A refused request is what the document says it may be; an accepted one must be valid by it.
      if (ex.status < 400) this.checkRequest(o, ex, path, add);
    }
    return { operations: ops.map((o) => o.operationId), violations };
  }

  private checkRequest(
    o: DocOperation,
    ex: Exchange,
    path: string,
    add: (side: Violation['side'], message: string) => void,
  ): void {
    const query = ex.url.includes('?') ? ex.url.slice(ex.url.indexOf('?') + 1) : '';
    const headers = Object.fromEntries(
      Object.entries(ex.requestHeaders).filter(([, v]) => v !== undefined),
    ) as Record<string, string | string[]>;
    const result = this.api.validator.validateRequest(
      { method: ex.method, path, query, headers, body: ex.requestBody as never },
      o.op,
    );
    if (!result.valid) add('request', `accepted, but invalid by the document: ${ajvErrors(result.errors)}`);

    const security = o.op.security ?? this.api.definition.security ?? [];
    if (security.length > 0) {
      const has = (scheme: string): boolean =>
        scheme === 'bearer'
          ? /^Bearer\s+\S/i.test(first(ex.requestHeaders.authorization) ?? '')
          : scheme === 'ticket'
            ? /(^|&)ticket=[^&]/.test(query)
            : first(ex.requestHeaders['x-tenant-id']) !== undefined;
      const met = security.some((req) => Object.keys(req).every(has));
      if (!met) add('request', `accepted without the documented security ${JSON.stringify(security)}`);
    }

    const sentBody = ex.requestBody !== undefined && ex.requestBody !== null;
    const body = o.op.requestBody as { content?: Record<string, unknown> } | undefined;
    if (sentBody && !body) add('request', 'accepted a body, but the operation documents none');
    if (sentBody && body?.content) {
      const type = mediaType(first(ex.requestHeaders['content-type']));
      if (!Object.keys(body.content).some((m) => mediaMatches(type, m)))
        add(
          'request',
          `accepted a body of ${type || 'no type'}; documented: ${Object.keys(body.content).join(', ')}`,
        );
    }
  }

  private checkResponse(
    o: DocOperation,
    ex: Exchange,
    add: (side: Violation['side'], message: string) => void,
  ): void {
    const responses = (o.op.responses ?? {}) as Record<string, ResponseDoc>;
    const key = String(ex.status);
    const documented = responses[key] ?? responses[`${key[0]}XX`] ?? responses.default;
    if (!documented) {
      add('response', `status ${ex.status} is not documented (${Object.keys(responses).join(', ')})`);
      return;
    }
    const type = mediaType(first(ex.responseHeaders['content-type']));
    const content = documented.content ?? {};
    const media = Object.keys(content);
    if (ex.responseBody.length === 0) {
      if (media.length > 0 && ex.method !== 'HEAD')
        add('response', `empty body; documented: ${media.join(', ')}`);
    } else if (media.length === 0) {
      add('response', `a body of ${type || 'no type'}, but the status documents none`);
    } else if (!media.some((m) => mediaMatches(type, m))) {
      add('response', `content-type ${type || '(none)'}; documented: ${media.join(', ')}`);
    } else if (type === 'application/json' || type.endsWith('+json')) {
      let body: unknown;
      try {
        body = JSON.parse(ex.responseBody.toString('utf8'));
      } catch {
        add('response', 'content-type is JSON, but the body is not');
        return;
      }
      const result = this.api.validator.validateResponse(body, o.op, ex.status);
      if (!result.valid) add('response', `body: ${ajvErrors(result.errors)}`);
    }

    const headers = Object.fromEntries(
      Object.entries(ex.responseHeaders)
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => [k.toLowerCase(), first(v)]),
    );
    for (const [name, header] of Object.entries(documented.headers ?? {}))
      if (header.required && headers[name.toLowerCase()] === undefined)
        add('response', `header ${name} missing`);
    const result = this.api.validator.validateResponseHeaders(headers, o.op, { statusCode: ex.status });
    if (!result.valid) add('response', `headers: ${ajvErrors(result.errors)}`);
  }
}

interface ResponseDoc {
  content?: Record<string, unknown>;
  headers?: Record<string, { required?: boolean }>;
}

/** 1 for an operation of a typed entity path (`x-entity-code`), else 0. */
function typedness(o: { op: object }): number {
  return (o.op as Record<string, unknown>)['x-entity-code'] ? 1 : 0;
}
