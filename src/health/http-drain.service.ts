import { Injectable, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { NotReadyError } from '../common/errors/app-error';
import { errorBody } from '../common/http/envelope';

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
  /**
   * Requests still running when SHUTDOWN_DRAIN_MS ran out whose answer had not begun (a slow
   * export, an upload still arriving): answered 503 NOT_READY instead of a reset connection.
   */
  cutShort: number;
  /** Connections still busy when SHUTDOWN_DRAIN_MS ran out, destroyed. */
  forced: number;
  durationMs: number;
}

type Phase = 'serving' | 'admitting' | 'refusing';

/** Turns of the event loop after the signal in which requests are still admitted (see drain). */
const GRACE_TURNS = 3;

/** How long the drain's 503s for unfinished requests may take to be written (loopback: microseconds). */
const ANSWER_FLUSH_MS = 200;

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
 * 4. waits until no answer is under way, at most SHUTDOWN_DRAIN_MS; a request still running then
 *    whose answer has not begun (a synchronous export longer than the drain) is answered 503
 *    NOT_READY with `Connection: close` — a complete answer, not a reset (issue 34 #14); an
 *    answer already streaming cannot be, and its connection is destroyed and counted; then the
 *    listener closes.
 *
 * Workers and pools are stopped afterwards, by the application's own shutdown (main.ts).
 */
@Injectable()
export class HttpDrainService implements OnModuleInit {
  private readonly sockets = new Set<Socket>();
  /** The replies of the requests under way (Fastify's, so the 503 goes through its hooks: CORS). */
  private readonly replies = new Set<FastifyReply>();
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
    // A bare Node server (the unit test's) has no Fastify: its requests are never answered early.
    const fastify = this.adapterHost.httpAdapter.getInstance?.<FastifyInstance>();
    fastify?.addHook('onRequest', (_request, reply, done) => {
      this.replies.add(reply);
      reply.raw.once('close', () => this.replies.delete(reply));
      done();
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
    const cutShort = await this.answerUnfinished();
    const forced = await this.closeListener(Math.max(deadline, Date.now() + ANSWER_FLUSH_MS));
    return {
      connectionsAtSignal,
      inFlightAtSignal,
      admitted: this.admitted,
      refused: this.refused,
      cutShort,
      forced,
      durationMs: Date.now() - started,
    };
  }

  /**
   * Answers 503 NOT_READY (Connection: close) every request still running whose answer has not
   * begun, and waits (at most ANSWER_FLUSH_MS) until those answers are written. The handler goes
   * on until the application closes; its own answer, later, finds the reply sent and is dropped.
   */
  private async answerUnfinished(): Promise<number> {
    const unfinished = [...this.replies].filter((reply) => !reply.sent && !reply.raw.headersSent);
    const err = new NotReadyError({ shuttingDown: true }, true);
    const written = unfinished.map(
      (reply) =>
        new Promise<void>((resolve) => {
          reply.raw.once('close', resolve);
          reply.raw.once('finish', resolve);
          void reply
            .code(503)
            .headers(err.headers)
            .header('connection', 'close')
            .send(
              errorBody(
                err.code,
                'Service is shutting down: this request did not finish within the shutdown drain (SHUTDOWN_DRAIN_MS); retry it',
                err.details,
                reply.request.id,
              ),
            );
        }),
    );
    await Promise.race([Promise.all(written), new Promise((r) => setTimeout(r, ANSWER_FLUSH_MS))]);
    return unfinished.length;
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
