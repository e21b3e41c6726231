import type { FastifyInstance, FastifyRequest } from 'fastify';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import { Exchange, OpenApiContract, Violation } from './openapi-contract';

/** Bytes of an answer kept for the check; downloads in tests are far smaller. */
const MAX_BODY = 8 * 1024 * 1024;

/**
 * Collects the contract check of every answer an app gives (issue 20): the violations, and which
 * documented statuses of which operations were touched. Set CONTRACT_CHECK=1 to hook it into
 * every e2e app (test/support/test-app.ts); the contract suite uses it directly.
 */
export class ContractRecorder {
  private readonly found: Violation[] = [];
  private readonly seen = new Map<string, Set<string>>();
  private checked = 0;
  private contract?: OpenApiContract;
  /**
   * Answers not checked yet. The check runs after the fact (flush(): when the results are read,
   * and at TestApp.close()), never inside the app's answer: Ajv compiles an operation's validators
   * on first use, and that much synchronous work in the app's event loop would make it shed load.
   */
  private readonly pending: Exchange[] = [];

  /**
   * Reads the document `source` serves (usually the app itself; another app's where its own
   * /api-docs/json is gated, e.g. by readiness).
   */
  async attach(source: FastifyInstance): Promise<OpenApiContract> {
    const res = await source.inject({ method: 'GET', url: '/api-docs/json' });
    if (res.statusCode !== 200) throw new Error(`GET /api-docs/json answered ${res.statusCode}`);
    this.contract = await OpenApiContract.create(res.json<object>());
    return this.contract;
  }

  /** attach() unless the app cannot serve its document yet (503: readiness gate, load shedding). */
  async attachWhenReady(source: FastifyInstance): Promise<void> {
    try {
      await this.attach(source);
    } catch (err) {
      if (!(err instanceof Error && / 503$/.test(err.message))) throw err;
    }
  }

  get attached(): boolean {
    return this.contract !== undefined;
  }

  get document(): OpenApiContract {
    if (!this.contract) throw new Error('ContractRecorder: attach() first');
    return this.contract;
  }

  /** Keeps an answer for the check. */
  record(ex: Exchange): void {
    this.pending.push(ex);
  }

  /** Checks the answers kept so far (once the document is known). */
  flush(): void {
    const contract = this.contract;
    if (!contract) return;
    for (const ex of this.pending.splice(0)) {
      let result: { operations: string[]; violations: Violation[] };
      try {
        result = contract.check(ex);
      } catch (err) {
        const message = `the check itself failed: ${err instanceof Error ? err.message : String(err)}`;
        const request = `${ex.method} ${ex.url}`;
        result = {
          operations: [],
          violations: [{ side: 'response', operation: '-', status: ex.status, request, message }],
        };
      }
      this.checked++;
      for (const op of result.operations) {
        const set = this.seen.get(op) ?? new Set<string>();
        set.add(String(ex.status));
        this.seen.set(op, set);
      }
      this.found.push(...result.violations);
    }
  }

  get violations(): Violation[] {
    this.flush();
    return this.found;
  }

  /** operationId → statuses answered. */
  get touched(): Map<string, Set<string>> {
    this.flush();
    return this.seen;
  }

  get exchanges(): number {
    this.flush();
    return this.checked;
  }

  /** Answers that could not be checked: the app never served its document. */
  get unchecked(): number {
    return this.contract ? 0 : this.pending.length;
  }

  /** Documented statuses never answered, as `operationId status`. */
  untouched(): string[] {
    const out: string[] = [];
    for (const [op, statuses] of this.document.documented())
      for (const s of statuses) if (!this.touched.get(op)?.has(s)) out.push(`${op} ${s}`);
    return out;
  }

  /** `operations touched/documented, statuses touched/documented`. */
  coverage(): { operations: [number, number]; statuses: [number, number] } {
    const documented = this.document.documented();
    let statuses = 0;
    let touchedStatuses = 0;
    let touchedOps = 0;
    for (const [op, list] of documented) {
      statuses += list.length;
      const t = this.touched.get(op);
      if (t && t.size > 0) touchedOps++;
      touchedStatuses += list.filter((s) => t?.has(s)).length;
    }
    return { operations: [touchedOps, documented.size], statuses: [touchedStatuses, statuses] };
  }

  /**
   * With CONTRACT_REPORT_DIR set, writes this app's exchanges, violations and touched statuses
   * there (one JSON file per app), for a run's summary (scripts/contract-summary.js).
   */
  save(label: string): void {
    const dir = process.env.CONTRACT_REPORT_DIR;
    if (!dir) return;
    mkdirSync(dir, { recursive: true });
    const touched = Object.fromEntries([...this.touched].map(([op, s]) => [op, [...s].sort()]));
    writeFileSync(
      join(dir, `${label.replace(/[^\w.-]+/g, '_')}-${randomBytes(4).toString('hex')}.json`),
      JSON.stringify({
        label,
        exchanges: this.exchanges,
        unchecked: this.unchecked,
        violations: this.violations,
        touched,
      }),
    );
  }

  /** A readable list of the violations (one line each, duplicates counted). */
  report(): string {
    const counts = new Map<string, number>();
    for (const v of this.violations) {
      const line = `[${v.side}] ${v.operation} ${v.status} ${v.request}: ${v.message}`;
      counts.set(line, (counts.get(line) ?? 0) + 1);
    }
    return [...counts].map(([line, n]) => (n > 1 ? `${line} (×${n})` : line)).join('\n');
  }
}

/**
 * Checks every answer of `fastify` as it leaves (what the client gets, for inject and real HTTP
 * alike): the head and the bytes written are captured on the raw response. Call before init.
 */
export function installContractHook(fastify: FastifyInstance, recorder: ContractRecorder): void {
  fastify.addHook('onRequest', (request: FastifyRequest, reply, done) => {
    const raw = reply.raw;
    const chunks: Buffer[] = [];
    let size = 0;
    // light-my-request's end() calls write(): count the bytes once.
    let ending = false;
    const keep = (chunk: unknown, encoding?: unknown): void => {
      if (chunk === undefined || chunk === null || typeof chunk === 'function' || size > MAX_BODY) return;
      const buf = Buffer.isBuffer(chunk)
        ? chunk
        : Buffer.from(chunk as string, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
      size += buf.length;
      chunks.push(buf);
    };
    // Over a real socket Fastify passes its headers to writeHead(), where getHeaders() does not see them.
    let head: Exchange['responseHeaders'] = {};
    const writeHead = raw.writeHead.bind(raw) as (...args: unknown[]) => ServerResponse;
    raw.writeHead = (...args: unknown[]) => {
      const headers = args.find((a, i) => i > 0 && typeof a === 'object' && a !== null);
      if (headers && !Array.isArray(headers)) head = { ...head, ...(headers as Exchange['responseHeaders']) };
      return writeHead(...args);
    };
    const write = raw.write.bind(raw) as (...args: unknown[]) => boolean;
    const end = raw.end.bind(raw) as (...args: unknown[]) => ServerResponse;
    raw.write = ((...args: unknown[]) => {
      if (!ending) keep(args[0], args[1]);
      return write(...args);
    }) as typeof raw.write;
    raw.end = ((...args: unknown[]) => {
      keep(args[0], args[1]);
      ending = true;
      const result = end(...args);
      ending = false;
      recorder.record({
        method: request.method,
        url: request.url,
        requestHeaders: request.headers,
        // A multipart body is streamed by its route (an import's file, D53), never parsed into
        // request.body: it stands for the form of the one part the document names.
        requestBody: isMultipart(request) ? { file: '(streamed part)' } : request.body,
        status: raw.statusCode,
        responseHeaders: {
          ...Object.fromEntries(Object.entries(head).map(([k, v]) => [k.toLowerCase(), v])),
          ...raw.getHeaders(),
        },
        responseBody: request.method === 'HEAD' ? Buffer.alloc(0) : Buffer.concat(chunks),
      });
      return result;
    }) as typeof raw.end;
    done();
  });
}

/** Whether @fastify/multipart (registered by the app) saw a multipart body; false where it is not registered. */
function isMultipart(request: FastifyRequest): boolean {
  const probe = (request as FastifyRequest & { isMultipart?: () => boolean }).isMultipart;
  return typeof probe === 'function' && probe.call(request);
}
