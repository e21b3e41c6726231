import type { OutgoingHttpHeaders } from 'node:http';
import { applyDecorators, Controller, Get, Req, Res, UseGuards } from '@nestjs/common';
import { ApiHeader, ApiOperation, ApiProduces, ApiQuery, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AcceptsTicket } from '../common/decorators/context.decorators';
import { ApiErrors, ApiProtectedOrTicket } from '../common/http/api-docs';
import type { RecordContext } from '../records/record-context';
import { ApiEntityCodeParam } from './entity.api-docs';
import { RecordCtx } from './entity.decorators';
import { ENTITY_CHAIN, EntityOperation } from './entity.guards';
import { LiveChangesService } from './live-changes.service';
import type { LiveStream, LiveView } from './live-stream';

/** `Last-Event-ID`: a sequence number; anything else is ignored (the stream starts now). */
function lastEventIdOf(request: FastifyRequest): number | undefined {
  const raw = request.headers['last-event-id'];
  const text = Array.isArray(raw) ? raw[0] : raw;
  if (typeof text !== 'string' || !/^\d{1,15}$/.test(text.trim())) return undefined;
  return Number(text.trim());
}

export const STREAM_DESCRIPTION =
  'text/event-stream (D55): `id: <tenant sequence>`, `event: created | updated | deleted | reset`, ' +
  '`data: {id, lastModified, row}` with `row` shaped as the caller’s read (null for deleted); ' +
  'a comment line every 15 s.';

/** The changes routes' operation description: what to try a stream with, since Swagger UI cannot. */
export const STREAM_OPERATION_DESCRIPTION =
  'A Server-Sent Events stream that stays open until the client closes it or the token ends. Swagger UI ' +
  'cannot display it: Try it out waits for an answer that never ends and shows nothing (a proxy that buffers ' +
  'or validates answers does the same). Try it with `curl -N -H "x-tenant-id: …" -H "authorization: Bearer …" ' +
  "<base>/api/v1/customers/changes`, with an EventSource and a ticket, or with the typed client's changes(). " +
  'No success envelope; a refusal before the stream starts is an ordinary error envelope.';

/**
 * Answers a request with a live change stream (D55): the reply is hijacked (no envelope), the
 * stream counted against the user's cap, ended when the client goes or the token expires.
 */
export async function serveChanges(
  live: LiveChangesService,
  request: FastifyRequest,
  reply: FastifyReply,
  ctx: RecordContext,
  viewOf?: (ctx: RecordContext) => LiveView,
): Promise<void> {
  // A dataview's view, built before anything is written: a failure is the request's error answer.
  const view = viewOf?.(ctx);
  const release = live.reserve(ctx);
  reply.hijack();
  const raw = reply.raw;
  // The headers the onRequest hooks set on the reply (x-request-id, security headers, CORS) go out
  // with the stream's own: a hijacked reply skips Fastify's sending of them.
  raw.writeHead(200, {
    ...(reply.getHeaders() as OutgoingHttpHeaders),
    'x-request-id': request.id,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  raw.write(': open\n\n');
  let closed = false;
  let expiry: NodeJS.Timeout | undefined;
  // Bytes written since the event loop's last turn: the response holds a burst of writes until the
  // turn ends, so they are not yet a sign of a client that does not read.
  let recent = 0;
  let turnEnds: NodeJS.Immediate | undefined;
  const stream: LiveStream = {
    ctx,
    issuedAtMs: request.tokenIssuedAtMs ?? 0,
    view,
    viewOf,
    last: 0,
    get closed() {
      return closed;
    },
    write: (chunk) => {
      if (closed) return;
      raw.write(chunk);
      recent += Buffer.byteLength(chunk);
      turnEnds ??= setImmediate(() => {
        recent = 0;
        turnEnds = undefined;
      });
    },
    // What the response still holds of earlier turns: the socket (the client) did not take it. The
    // kernel's buffers are not counted.
    backlog: () => (closed ? 0 : Math.max(0, raw.writableLength - recent)),
    close: (abort) => {
      if (closed) return;
      closed = true;
      if (expiry) clearTimeout(expiry);
      if (turnEnds) clearImmediate(turnEnds);
      live.close(stream);
      release();
      // A dropped stream's queue goes at once: ending would keep it until the client read it all.
      if (abort) raw.destroy();
      else raw.end();
    },
  };
  request.raw.on('close', () => stream.close());
  // D55: the stream ends when its token expires.
  const msLeft = ctx.user.exp * 1000 - Date.now();
  if (Number.isFinite(msLeft) && ctx.user.exp > 0) {
    expiry = setTimeout(() => stream.close(), Math.max(0, Math.min(msLeft, 2_147_000_000)));
    expiry.unref();
  }
  await live.open(stream, lastEventIdOf(request));
  if (closed) live.close(stream);
}

/** `?ticket=` on a changes stream (D55), documented alike on both routes. */
export const ApiTicketQuery = (): MethodDecorator & ClassDecorator =>
  applyDecorators(
    ApiProtectedOrTicket(),
    ApiQuery({
      name: 'ticket',
      required: false,
      type: String,
      description:
        'A ticket from POST /api/v1/changes/tickets (single use, 60 s), instead of both the x-tenant-id ' +
        'and Authorization headers (for an EventSource, which sends no headers). Used, expired or unknown: 401 TOKEN_INVALID.',
    }),
  );

/** D55: live changes of an entity as Server-Sent Events (no success envelope on this route). */
@ApiTags('entities')
@Controller()
export class LiveChangesController {
  constructor(private readonly live: LiveChangesService) {}

  @Get('api/v1/:entity_code/changes')
  @UseGuards(...ENTITY_CHAIN)
  @EntityOperation('read')
  @AcceptsTicket()
  @ApiTicketQuery()
  @ApiOperation({
    operationId: 'streamRecordChanges',
    summary: 'Live changes of an entity (Server-Sent Events, D55)',
    description: STREAM_OPERATION_DESCRIPTION,
  })
  @ApiEntityCodeParam()
  @ApiHeader({
    name: 'Last-Event-ID',
    required: false,
    description: 'Resume after this sequence (outbox retention)',
  })
  @ApiProduces('text/event-stream')
  @ApiResponse({
    status: 200,
    description: STREAM_DESCRIPTION,
    content: { 'text/event-stream': { schema: { type: 'string' } } },
  })
  @ApiErrors('UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND', 'RATE_LIMITED')
  async changes(
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
    @RecordCtx() ctx: RecordContext,
  ): Promise<void> {
    await serveChanges(this.live, request, reply, ctx);
  }
}
