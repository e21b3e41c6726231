import { Injectable, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** What the drain did; logged in the "shutdown complete" line. */
export interface DrainReport {
  /** Open connections when the drain began. */
  connectionsAtSignal: number;
  /** Requests whose answer was under way when the drain began; each finished (or was forced). */
  inFlightAtSignal: number;
  /** Requests read right after the signal (their bytes were already queued) and served. */
  admitted: number;
  /** Requests that arrived during the drain, answered 503 NOT_READY with Connection: close. */
  refused: number;
  /** Connections still busy when SHUTDOWN_DRAIN_MS ran out, destroyed. */
  forced: number;
  durationMs: number;
}

type Phase = 'serving' | 'admitting' | 'refusing';

/** Turns of the event loop after the signal in which requests are still admitted (see drain). */
const GRACE_TURNS = 3;

/** How often the drain looks whether an answer is still under way. */
const POLL_MS = 10;

/** Resolves after the event loop's next check phase: every poll phase in between has run. */
const nextLoopTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * The response a connection is writing now, if any. `_httpMessage` is Node's own link from a
 * socket to its current response, the one `server.closeIdleConnections()` tests; there is no
 * public equivalent.
 */
function responseOf(socket: Socket): ServerResponse | undefined {
  const res = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
  return res && !res.writableFinished ? res : undefined;
}

/**
 * Graceful shutdown of the HTTP side (issue 20 #5). Closing the server outright, as Node and
 * Fastify do, resets what is still on the wire: `server.close()` destroys every connection it
 * thinks idle, also one whose next request sits unread in the socket's receive queue (the kernel
 * answers that close with a reset), and the connections in the listen backlog are reset when the
 * listening socket closes. So the drain, started on SIGTERM/SIGINT before anything is closed:
 *
 * 1. marks every answer under way `Connection: close`, so no client sends another request on it;
 * 2. keeps serving for three more turns of the event loop: requests whose bytes were queued
 *    before the signal (also on connections still in the listen backlog) are read in those
 *    turns' poll phases and served as usual (`admit`), with `Connection: close`;
 * 3. then closes the idle keep-alive connections (nothing is left unread on them) and answers
 *    every later request, on any connection, 503 NOT_READY with `Connection: close` — the
 *    listener stays open, so a late connection gets that answer instead of a reset;
 * 4. waits until no answer is under way (at most SHUTDOWN_DRAIN_MS; connections still busy then
 *    are destroyed and counted), then closes the listener.
 *
 * Workers and pools are stopped afterwards, by the application's own shutdown (main.ts).
 */
@Injectable()
export class HttpDrainService implements OnModuleInit {
  private readonly sockets = new Set<Socket>();
  private phase: Phase = 'serving';
  private admitted = 0;
  private refused = 0;
  private server?: Server;

  constructor(private readonly adapterHost: HttpAdapterHost) {}

  onModuleInit(): void {
    const server = this.adapterHost.httpAdapter?.getHttpServer() as Server | undefined;
    if (!server) return;
    this.server = server;
    // Per connection, not per request: the requests of a connection are looked up at the signal.
    server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
  }

  get draining(): boolean {
    return this.phase !== 'serving';
  }

  /**
   * Whether a request read during the shutdown is served (its bytes were queued before the
   * signal, and start-up had finished: `started`) or refused; counts either.
   */
  admit(started: boolean): boolean {
    if (this.phase === 'admitting' && started) {
      this.admitted++;
      return true;
    }
    this.refused++;
    return false;
  }

  /** Runs the drain (see the class comment); resolves when the listener is closed. */
  async drain(maxMs: number): Promise<DrainReport> {
    const started = Date.now();
    const deadline = started + maxMs;
    this.phase = 'admitting';
    const connectionsAtSignal = this.sockets.size;
    let inFlightAtSignal = 0;
    for (const socket of this.sockets) {
      const res = responseOf(socket);
      if (!res) continue;
      inFlightAtSignal++;
      if (!res.headersSent) res.setHeader('connection', 'close');
    }
    // The signal may be handled in the middle of a poll phase, after the sockets that phase read:
    // bytes queued before it on an open connection are read in the next poll phase; a connection
    // still in the listen backlog is accepted in that one and read in the one after.
    for (let turn = 0; turn < GRACE_TURNS; turn++) await nextLoopTurn();
    this.phase = 'refusing';
    this.server?.closeIdleConnections();

    while (Date.now() < deadline && this.busy().length > 0) {
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    const forced = await this.closeListener(deadline);
    return {
      connectionsAtSignal,
      inFlightAtSignal,
      admitted: this.admitted,
      refused: this.refused,
      forced,
      durationMs: Date.now() - started,
    };
  }

  /** Connections writing an answer now. */
  private busy(): Socket[] {
    return [...this.sockets].filter((socket) => responseOf(socket) !== undefined);
  }

  /**
   * Closes the listener (and the idle connections), waits until the remaining connections have
   * closed or the deadline, then destroys what is left; returns how many that was.
   */
  private async closeListener(deadline: number): Promise<number> {
    const server = this.server;
    if (!server?.listening) return 0;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    const remaining = Math.max(0, deadline - Date.now());
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      closed.then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), remaining);
      }),
    ]);
    clearTimeout(timer);
    if (!timedOut) return 0;
    const forced = this.sockets.size;
    server.closeAllConnections();
    await closed;
    return forced;
  }
}
