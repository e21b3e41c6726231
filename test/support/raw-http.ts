import { connect, type Socket } from 'node:net';

/** A complete HTTP/1.1 answer as it came over the wire. */
export interface RawAnswer {
  status: number;
  /** Header names in lower case; a repeated header keeps its last value. */
  headers: Record<string, string>;
  body: string;
}

/**
 * What became of one request: a complete answer, a TCP reset (ECONNRESET/EPIPE) before it, or a
 * clean close (FIN) before it. Only the first counts as answered.
 */
export type RawOutcome =
  | { kind: 'answer'; answer: RawAnswer; at: number }
  | { kind: 'reset'; error: string; at: number }
  | { kind: 'closed'; at: number };

interface Pending {
  resolve: (outcome: RawOutcome) => void;
}

/**
 * One HTTP/1.1 connection driven by hand, for tests that must see the transport: requests are
 * written as bytes (a body may be written in parts, later), answers are parsed from the bytes
 * (Content-Length or chunked), and a reset is told apart from a clean close — an HTTP client
 * library reports both as "socket hang up".
 */
export class RawConnection {
  private buffer = Buffer.alloc(0);
  private pending?: Pending;
  private ended = false;
  private failure?: string;

  private constructor(private readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.parse();
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      this.failure = err.code ?? err.message;
      this.settle({ kind: 'reset', error: this.failure, at: Date.now() });
    });
    socket.on('end', () => {
      this.ended = true;
      this.settle({ kind: 'closed', at: Date.now() });
    });
    socket.on('close', () => {
      this.ended = true;
      this.settle(
        this.failure
          ? { kind: 'reset', error: this.failure, at: Date.now() }
          : { kind: 'closed', at: Date.now() },
      );
    });
  }

  static open(port: number, host = '127.0.0.1'): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect({ port, host, noDelay: true });
      socket.once('connect', () => resolve(new RawConnection(socket)));
      socket.once('error', reject);
    });
  }

  /** Whether the server has closed (or reset) the connection. */
  get closed(): boolean {
    return this.ended || this.socket.destroyed;
  }

  /**
   * Writes `head` (request line and headers, without the blank line; Host and Content-Length are
   * added) and the body's first part at once; each later part is written `delayMs` after the one
   * before. Resolves with what became of the request.
   */
  request(
    head: string,
    body: { parts: string[]; delayMs: number } | string = '',
  ): { outcome: Promise<RawOutcome>; sent: Promise<void> } {
    if (this.pending) throw new Error('One request at a time per RawConnection');
    const parts = typeof body === 'string' ? [body] : body.parts;
    const delayMs = typeof body === 'string' ? 0 : body.delayMs;
    const length = parts.reduce((n, p) => n + Buffer.byteLength(p), 0);
    const outcome = new Promise<RawOutcome>((resolve) => {
      this.pending = { resolve };
    });
    const lines = [head, 'Host: 127.0.0.1'];
    if (length > 0 || /^(POST|PUT)/.test(head)) lines.push(`Content-Length: ${length}`);
    const sent = (async () => {
      this.write(`${lines.join('\r\n')}\r\n\r\n${parts[0] ?? ''}`);
      for (const part of parts.slice(1)) {
        await new Promise((r) => setTimeout(r, delayMs));
        this.write(part);
      }
    })();
    if (this.closed) {
      const at = Date.now();
      this.settle(this.failure ? { kind: 'reset', error: this.failure, at } : { kind: 'closed', at });
    }
    return { outcome, sent };
  }

  close(): void {
    this.socket.destroy();
  }

  private write(text: string): void {
    if (!this.socket.destroyed && this.socket.writable) this.socket.write(text);
  }

  private settle(outcome: RawOutcome): void {
    const pending = this.pending;
    if (!pending) return;
    this.pending = undefined;
    pending.resolve(outcome);
  }

  /** Parses one answer from the buffer when it is complete. */
  private parse(): void {
    if (!this.pending) return;
    const headEnd = this.buffer.indexOf('\r\n\r\n');
    if (headEnd === -1) return;
    const [statusLine, ...headerLines] = this.buffer.subarray(0, headEnd).toString('latin1').split('\r\n');
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '')?.[1] ?? NaN);
    const headers: Record<string, string> = {};
    for (const line of headerLines) {
      const colon = line.indexOf(':');
      if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const rest = this.buffer.subarray(headEnd + 4);
    let body: Buffer | undefined;
    let used = 0;
    if ((headers['transfer-encoding'] ?? '').toLowerCase() === 'chunked') {
      const chunks: Buffer[] = [];
      let at = 0;
      for (;;) {
        const lineEnd = rest.indexOf('\r\n', at);
        if (lineEnd === -1) return;
        const size = parseInt(rest.subarray(at, lineEnd).toString('latin1'), 16);
        if (rest.length < lineEnd + 2 + size + 2) return;
        if (size === 0) {
          used = lineEnd + 4;
          break;
        }
        chunks.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size));
        at = lineEnd + 2 + size + 2;
      }
      body = Buffer.concat(chunks);
    } else {
      const length = Number(headers['content-length'] ?? 0);
      if (rest.length < length) return;
      body = rest.subarray(0, length);
      used = length;
    }
    this.buffer = this.buffer.subarray(headEnd + 4 + used);
    this.settle({ kind: 'answer', answer: { status, headers, body: body.toString('utf8') }, at: Date.now() });
  }
}
