import type { HttpAdapterHost } from '@nestjs/core';
import {
  Agent,
  createServer,
  request,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { HttpDrainService } from './http-drain.service';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** A real HTTP server on a free port with the drain attached, as the module wires it. */
async function serve(handler: Handler): Promise<{ server: Server; drain: HttpDrainService; port: number }> {
  const server = createServer(handler);
  const drain = new HttpDrainService({
    httpAdapter: { getHttpServer: () => server },
  } as unknown as HttpAdapterHost);
  drain.onModuleInit();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, drain, port: (server.address() as AddressInfo).port };
}

interface Answer {
  status?: number;
  connection?: string;
  error?: string;
}

function get(port: number, agent?: Agent): Promise<Answer> {
  return new Promise((resolve) => {
    const req = request({ port, host: '127.0.0.1', path: '/', agent }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, connection: res.headers.connection }));
    });
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
    req.end();
  });
}

describe(HttpDrainService.name, () => {
  let servers: Server[] = [];
  afterEach(() => {
    for (const s of servers) s.closeAllConnections();
    servers = [];
  });

  it('should let an answer under way finish with Connection: close, then close the listener', async () => {
    let arrived!: () => void;
    const inHandler = new Promise<void>((resolve) => (arrived = resolve));
    const { server, drain, port } = await serve((_req, res) => {
      arrived();
      setTimeout(() => res.end('done'), 150);
    });
    servers.push(server);
    const answer = get(port);
    await inHandler;
    const report = await drain.drain(2000);
    expect(await answer).toEqual({ status: 200, connection: 'close' });
    expect(report).toMatchObject({ connectionsAtSignal: 1, inFlightAtSignal: 1, forced: 0 });
    expect(report.durationMs).toBeGreaterThanOrEqual(50);
    expect(server.listening).toBe(false);
  });

  it('should admit requests read in the turn after the signal, and refuse later ones and those before start-up', async () => {
    // An answer under way keeps the drain going while the gate asks.
    let arrived!: () => void;
    const inHandler = new Promise<void>((resolve) => (arrived = resolve));
    const { server, drain, port } = await serve((_req, res) => {
      arrived();
      setTimeout(() => res.end(), 100);
    });
    servers.push(server);
    const answer = get(port);
    await inHandler;
    expect(drain.draining).toBe(false);
    const running = drain.drain(1000);
    expect(drain.draining).toBe(true);
    expect(drain.admit(true)).toBe(true);
    expect(drain.admit(false)).toBe(false);
    for (let turn = 0; turn < 4; turn++) await new Promise((r) => setImmediate(r));
    expect(drain.admit(true)).toBe(false);
    expect(await running).toMatchObject({ admitted: 1, refused: 2, forced: 0 });
    expect(await answer).toEqual({ status: 200, connection: 'close' });
  });

  it('should close an idle keep-alive connection cleanly, without a reset', async () => {
    const { server, drain, port } = await serve((_req, res) => res.end('ok'));
    servers.push(server);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    expect(await get(port, agent)).toEqual({ status: 200, connection: 'keep-alive' });
    const socket = Object.values(agent.freeSockets).flat()[0];
    expect(socket).toBeDefined();
    const errors: string[] = [];
    socket?.on('error', (err: NodeJS.ErrnoException) => errors.push(err.code ?? err.message));
    const closed = new Promise<void>((resolve) => socket?.once('close', () => resolve()));
    const report = await drain.drain(1000);
    await closed;
    expect(errors).toEqual([]);
    expect(report).toMatchObject({ connectionsAtSignal: 1, inFlightAtSignal: 0, forced: 0 });
    agent.destroy();
  });

  it('should destroy the connections still busy at the deadline, and count them', async () => {
    let arrived!: () => void;
    const inHandler = new Promise<void>((resolve) => (arrived = resolve));
    const { server, drain, port } = await serve(() => arrived()); // never answers
    servers.push(server);
    const answer = get(port);
    await inHandler;
    const report = await drain.drain(200);
    expect(report).toMatchObject({ inFlightAtSignal: 1, forced: 1 });
    expect(report.durationMs).toBeLessThan(1000);
    expect((await answer).error).toBeDefined();
    expect(server.listening).toBe(false);
  });

  it('should do nothing but count when the server never listened', async () => {
    const server = createServer();
    const drain = new HttpDrainService({
      httpAdapter: { getHttpServer: () => server },
    } as unknown as HttpAdapterHost);
    drain.onModuleInit();
    expect(await drain.drain(100)).toMatchObject({ connectionsAtSignal: 0, inFlightAtSignal: 0, forced: 0 });
  });
});
