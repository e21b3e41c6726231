import { ChildProcess, spawn } from 'node:child_process';
import { connect, createServer } from 'node:net';

/** A port that was free a moment ago on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

/** Whether something on the port answers PING with +PONG. */
function pong(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (data) => done(data.toString().startsWith('+PONG')));
  });
}

/**
 * A redis-server of the test's own on a free port, without persistence: stopped and started again
 * it comes back EMPTY, as a restarted cache without a snapshot does. For tests that take the cache
 * away; the machine's shared Redis is never touched.
 */
export class RedisServer {
  private child?: ChildProcess;

  private constructor(readonly port: number) {}

  static async start(): Promise<RedisServer> {
    const server = new RedisServer(await freePort());
    await server.start();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts the process and resolves once it answers PING. */
  async start(timeoutMs = 10000): Promise<void> {
    if (this.child) return;
    const child = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
    this.child = child;
    let exited = false;
    child.once('exit', () => {
      exited = true;
      if (this.child === child) this.child = undefined;
    });
    const deadline = Date.now() + timeoutMs;
    while (!(await pong(this.port))) {
      if (exited) throw new Error(`redis-server on port ${this.port} exited at start`);
      if (Date.now() > deadline) throw new Error(`redis-server on port ${this.port} did not answer`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Stops the process (SIGTERM) and resolves once it has exited; its data is gone. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = undefined;
    if (child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
  }
}
