/**
 * Live changes (D55) over a `fetch` stream: the Server-Sent Events of `GET /api/v1/{entity}/changes`
 * or `GET /api/v1/dataviews/{code}/changes`, parsed and yielded one by one. A dropped connection (the
 * stream ends, the network fails, a 5xx or 429 answer) is reconnected after a backoff with
 * `Last-Event-ID` set to the last id seen, so the service replays what was missed; an `event: reset`
 * (the id is older than the service keeps) is yielded like any other — refetch, then carry on.
 * Works in browsers and in Node ≥ 20 (global fetch, ReadableStream).
 */

/** One event of the stream: `id` (the tenant's sequence), `event` and `data` (parsed JSON when it is JSON). */
export interface LiveEvent<T = unknown> {
  id: string | undefined;
  event: string;
  data: T;
}

/** The `data` of a created, updated or deleted event (D55). */
export interface LiveChange<R = Record<string, unknown>> {
  id: number;
  lastModified: string | null;
  /** The row as the caller reads it; null for a deleted one. */
  row: R | null;
}

/**
 * An event of a change stream with its `data` typed by its name: `created`, `updated` and `deleted`
 * carry a LiveChange of rows `R`; `reset` (the last id is older than the service keeps) carries none.
 */
export type ChangeEvent<R = Record<string, unknown>> =
  | { id: string | undefined; event: 'created' | 'updated' | 'deleted'; data: LiveChange<R> }
  | { id: string | undefined; event: 'reset'; data: Record<string, never> };

export interface LiveChangesOptions {
  /** Origin (and path prefix) of the service; '' (same origin) by default. */
  baseUrl?: string;
  /** The stream's path, e.g. `/api/v1/customers/changes` (a query such as `?ticket=` may be part of it). */
  path: string | (() => string | Promise<string>);
  /** The request headers, asked again before every (re)connection (a token may have been renewed). */
  headers?: () => Record<string, string> | Promise<Record<string, string>>;
  /** Resume after this id (a `Last-Event-ID` kept from an earlier stream). */
  lastEventId?: string;
  /** Aborting it ends the iteration (the generator returns). */
  signal?: AbortSignal;
  /** Milliseconds before the first reconnection (doubled on each failure in a row, up to `maxDelayMs`); 500. */
  initialDelayMs?: number;
  maxDelayMs?: number;
  /** Failed connections in a row after which the last error is thrown; unlimited by default. */
  maxRetries?: number;
  /** Called before each reconnection with the attempt number and the delay. */
  onReconnect?: (attempt: number, delayMs: number, lastEventId: string | undefined) => void;
  fetch?: typeof fetch;
}

/** An answer that reconnecting cannot fix (401, 403, 404, …): thrown with the status and the error body. */
export class LiveChangesError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    const code = (body as { error?: { code?: string } } | null)?.error?.code;
    super(`Live changes refused: ${status}${code ? ` ${code}` : ''}`);
    this.name = 'LiveChangesError';
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** Splits SSE text into events (a blank line ends one); comments (`: heartbeat`) are skipped. */
export class SseParser {
  private buffer = '';
  private id: string | undefined;
  private event = '';
  private data: string[] = [];
  /** The `retry:` field the server last sent (ms), if any. */
  retryMs: number | undefined;

  push(chunk: string): LiveEvent<string>[] {
    this.buffer += chunk;
    const out: LiveEvent<string>[] = [];
    let nl: number;
    while ((nl = this.buffer.search(/\r\n|\r|\n/)) >= 0) {
      const line = this.buffer.slice(0, nl);
      const width = this.buffer.startsWith('\r\n', nl) ? 2 : 1;
      this.buffer = this.buffer.slice(nl + width);
      if (line === '') {
        if (this.data.length > 0 || this.event !== '')
          out.push({ id: this.id, event: this.event || 'message', data: this.data.join('\n') });
        this.event = '';
        this.data = [];
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'data') this.data.push(value);
      else if (field === 'event') this.event = value;
      else if (field === 'id' && !value.includes('\0')) this.id = value;
      else if (field === 'retry' && /^\d+$/.test(value)) this.retryMs = Number(value);
    }
    return out;
  }
}

function parsed(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    return data;
  }
}

/**
 * The events of a live changes stream, reconnecting with `Last-Event-ID` after a dropped connection.
 * `for await (const e of liveChanges({path: '/api/v1/customers/changes', headers}))`; end it with
 * `signal` (or `break`).
 */
export async function* liveChanges<T = LiveChange>(options: LiveChangesOptions): AsyncGenerator<LiveEvent<T>> {
  const fetchImpl: typeof fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const initial = options.initialDelayMs ?? 500;
  const max = options.maxDelayMs ?? 30_000;
  let lastEventId = options.lastEventId;
  let failures = 0;
  let serverRetry: number | undefined;
  for (;;) {
    if (options.signal?.aborted) return;
    let error: unknown;
    try {
      const path = typeof options.path === 'function' ? await options.path() : options.path;
      const headers: Record<string, string> = { accept: 'text/event-stream', ...((await options.headers?.()) ?? {}) };
      if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
      const res = await fetchImpl(`${options.baseUrl ?? ''}${path}`, { headers, signal: options.signal });
      if (!res.ok || !res.body) {
        const body = await res.text().then(parsed, () => null);
        // Worth another try: the service is busy or away. Anything else is the caller's to fix.
        if (res.status !== 429 && res.status < 500) throw new LiveChangesError(res.status, body);
        error = new LiveChangesError(res.status, body);
      } else {
        failures = 0;
        const parser = new SseParser();
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        try {
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            for (const e of parser.push(value)) {
              if (e.id !== undefined) lastEventId = e.id;
              yield { id: e.id, event: e.event, data: parsed(e.data) as T };
            }
            serverRetry = parser.retryMs ?? serverRetry;
          }
        } finally {
          reader.cancel().catch(() => undefined);
        }
        error = new Error('The stream ended');
      }
    } catch (err) {
      if (err instanceof LiveChangesError && err.status !== 429 && err.status < 500) throw err;
      error = err;
    }
    if (options.signal?.aborted) return;
    failures += 1;
    if (options.maxRetries !== undefined && failures > options.maxRetries) throw error;
    const delay = Math.min(max, (serverRetry ?? initial) * 2 ** (failures - 1));
    // Some jitter, so that the clients of one restarted instance do not all come back at once.
    const wait = Math.round(delay * (0.8 + Math.random() * 0.4));
    options.onReconnect?.(failures, wait, lastEventId);
    await sleep(wait, options.signal);
  }
}
