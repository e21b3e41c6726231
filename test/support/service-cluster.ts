import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEMO_PASSWORD, TENANT, tenantHeader } from './auth';
import { dropRedisPrefix } from './redis-keys';
import { NO_LOAD_SHEDDING, waitFor } from './test-app';
import {
  createTestDatabase,
  realRedisUrl,
  TEST_SECRETS,
  type TestDatabase,
  type TestDialect,
} from './test-database';

const ROOT = join(__dirname, '..', '..');
const MAIN = join(ROOT, 'dist', 'main.js');

let built = false;

// Per checkout: other checkouts on the machine build their own dist/.
const BUILD_LOCK = join(
  tmpdir(),
  `mtb-build-lock-${createHash('sha1').update(ROOT).digest('hex').slice(0, 12)}`,
);
/** A lock older than this is left over from a killed run. */
const BUILD_LOCK_STALE_MS = 5 * 60_000;

/** Blocks the thread (the build is synchronous too). */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Builds dist/ when a source changed since the last build, once per test file: the processes run
 * dist/. Test files run in parallel and several start processes; a forced build rewrote dist/
 * under the processes of another file (a lazily required module read half-written), so builds
 * take a lock (a directory, created atomically) and are skipped when dist/ is current.
 */
export function buildService(): void {
  if (built) return;
  const deadline = Date.now() + BUILD_LOCK_STALE_MS;
  for (;;) {
    try {
      mkdirSync(BUILD_LOCK);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const age = Date.now() - (statSync(BUILD_LOCK, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > BUILD_LOCK_STALE_MS || Date.now() > deadline)
        rmSync(BUILD_LOCK, { recursive: true, force: true });
      else sleepSync(200);
    }
  }
  try {
    execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-if-stale.js'), '--quiet'], {
      cwd: ROOT,
      stdio: 'pipe',
    });
  } catch (err) {
    const { stdout, stderr } = err as { stdout?: Buffer; stderr?: Buffer };
    throw new Error(`The build failed:\n${String(stdout ?? '')}${String(stderr ?? '')}`);
  } finally {
    rmSync(BUILD_LOCK, { recursive: true, force: true });
  }
  built = true;
}

/** A port nobody listens on right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export interface JsonResponse {
  status: number;
  /** The service's JSON envelope (parsed), or the text when it is not JSON; tests read into it freely. */
  body: any;
}

/** HTTP to one service process over the network: sign-in, then JSON calls as an acme user. */
export class ServiceClient {
  token = '';

  constructor(
    readonly baseUrl: string,
    readonly tenantId: string = TENANT.acme,
  ) {}

  /** POST /api/v1/auth/signin (as test/support/auth.ts signin() does in-process); keeps the token. */
  async signin(email: string, password = DEMO_PASSWORD): Promise<string> {
    const res = await this.request('POST', '/api/v1/auth/signin', { email_id: email, password }, false);
    if (res.status !== 200)
      throw new Error(`Sign-in of ${email} at ${this.baseUrl}: ${res.status} ${JSON.stringify(res.body)}`);
    this.token = String(res.body.data.token);
    return this.token;
  }

  async request(
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    path: string,
    body?: unknown,
    authorized = true,
  ): Promise<JsonResponse> {
    const headers: Record<string, string> = { 'x-tenant-id': tenantHeader(this.tenantId) };
    if (authorized && this.token) headers.authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text === '' ? null : JSON.parse(text);
    } catch {
      // not JSON: keep the text
    }
    return { status: res.status, body: parsed };
  }

  get(path: string): Promise<JsonResponse> {
    return this.request('GET', path);
  }

  post(path: string, body?: unknown): Promise<JsonResponse> {
    return this.request('POST', path, body ?? {});
  }
}

/** One `node dist/main.js` of the cluster. */
export class ServiceProcess {
  child!: ChildProcess;
  exited!: Promise<number | null>;
  readonly client: ServiceClient;
  /** How long the last start took until /readyz answered 200. */
  readyMs = 0;
  private out = '';
  private err = '';
  /** Every earlier run's stdout, for the post-mortem of a failing test. */
  private history = '';

  constructor(
    readonly index: number,
    readonly port: number,
    private readonly cwd: string,
    private env: Record<string, string>,
  ) {
    this.client = new ServiceClient(`http://127.0.0.1:${port}`);
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** This run's stdout (JSON log lines). */
  stdout(): string {
    return this.out;
  }

  stderr(): string {
    return this.err;
  }

  /** stdout of every run so far, this one last. */
  allStdout(): string {
    return this.history + this.out;
  }

  /** Spawns the process and waits for /readyz 200. */
  async start(extraEnv: Record<string, string> = {}, readyTimeoutMs = 60000): Promise<void> {
    this.env = { ...this.env, ...extraEnv };
    const began = Date.now();
    this.history += this.out;
    this.out = '';
    this.err = '';
    const child = spawn(process.execPath, [MAIN], {
      cwd: this.cwd,
      env: { PATH: process.env.PATH ?? '', HOME: this.cwd, ...this.env, API_PORT: String(this.port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    child.stdout?.on('data', (d: Buffer) => (this.out += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (this.err += d.toString()));
    this.exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      await waitFor(
        async () => {
          if (child.exitCode !== null || child.signalCode !== null)
            throw new Error(`exited with ${child.exitCode ?? child.signalCode}`);
          const res = await fetch(`${this.client.baseUrl}/readyz`).catch(() => undefined);
          return res?.status === 200;
        },
        readyTimeoutMs,
        100,
      );
      this.readyMs = Date.now() - began;
    } catch (err) {
      child.kill('SIGKILL');
      throw new Error(
        `Service process #${this.index} (port ${this.port}) not ready: ${(err as Error).message}\n` +
          `stderr: ${this.err.slice(-4000)}\nstdout: ${this.out.slice(-4000)}`,
      );
    }
  }

  /** SIGTERM: a graceful shutdown; resolves with the exit code. */
  async stop(): Promise<number | null> {
    if (!this.running) return this.child.exitCode;
    this.child.kill('SIGTERM');
    return this.exited;
  }

  /** SIGKILL: the process dies at once, whatever it was doing. */
  async kill(): Promise<void> {
    if (this.running) this.child.kill('SIGKILL');
    await this.exited;
  }

  /** Kills the process (when it runs) and starts it again on the same port; the client keeps its token. */
  async restart(extraEnv: Record<string, string> = {}): Promise<void> {
    if (this.child && this.running) await this.kill();
    await this.start(extraEnv);
  }
}

export interface ClusterOptions {
  /** Names the test database. */
  label: string;
  dialect: TestDialect;
  /** How many service processes. */
  size: number;
  /** WORKFLOW_LEASE_MS of every process (default 30000). */
  leaseMs?: number;
  /** Further variables for every process. */
  env?: Record<string, string>;
}

/**
 * N service processes (`node dist/main.js`) on ONE database and the real Redis (one random
 * CACHE_KEY_PREFIX, so the workflow wake bus and the collection events reach every process), each
 * on a port of its own. The first process migrates and seeds; the others start after it, one after
 * another, and run neither (no migration race).
 */
export class ServiceCluster {
  readonly prefix = `wfc-${randomBytes(4).toString('hex')}`;
  /** The Redis the processes share (a test's own env may name another): close() cleans it. */
  private cacheUrl = realRedisUrl();

  private constructor(
    readonly db: TestDatabase,
    readonly nodes: ServiceProcess[],
    private readonly cwd: string,
  ) {}

  static async start(options: ClusterOptions): Promise<ServiceCluster> {
    buildService();
    const db = await createTestDatabase(options.label, options.dialect);
    const cwd = mkdtempSync(join(tmpdir(), 'mtb-cluster-'));
    const cluster = new ServiceCluster(db, [], cwd);
    try {
      const base: Record<string, string> = {
        ...TEST_SECRETS,
        NODE_ENV: 'test',
        LOG_FORMAT: 'json',
        LOG_LEVEL: 'info',
        CACHE_URL: realRedisUrl(),
        CACHE_KEY_PREFIX: cluster.prefix,
        CACHE_STARTUP_RETRY_MS: '100',
        WORKFLOW_POLL_MS: '100',
        WORKFLOW_LEASE_MS: String(options.leaseMs ?? 30000),
        // 200 starts and the polls of several processes share one tenant's budget through Redis.
        RATE_LIMIT_POINTS: '100000',
        // No load shedding (503 OVERLOADED): a busy test machine, or SQLite's step held inside its
        // statement by the crash test, must not turn the calls under test away.
        ...NO_LOAD_SHEDDING,
        ...db.env,
        ...options.env,
      };
      cluster.cacheUrl = base.CACHE_URL;
      for (let i = 0; i < options.size; i++) {
        const first = i === 0;
        const node = new ServiceProcess(i, await freePort(), cwd, {
          ...base,
          DB_RUN_MIGRATIONS: first ? 'true' : 'false',
          SEED_DEMO: first ? 'true' : 'false',
        });
        cluster.nodes.push(node);
        await node.start();
      }
      return cluster;
    } catch (err) {
      await cluster.close();
      throw err;
    }
  }

  node(i: number): ServiceProcess {
    const n = this.nodes[i];
    if (!n) throw new Error(`No service process #${i}`);
    return n;
  }

  /** The node whose workflow worker id (`host:pid:…`, wfq_claimed_by) is `workerId`. */
  byWorker(workerId: string): ServiceProcess | undefined {
    const pid = Number(workerId.split(':')[1]);
    return this.nodes.find((n) => n.pid === pid);
  }

  /** Signs `email` in on the first process and hands the token to every process's client. */
  async signin(email = 'admin@acme.test'): Promise<string> {
    const token = await this.node(0).client.signin(email);
    for (const n of this.nodes) n.client.token = token;
    return token;
  }

  /** Kills every process (SIGKILL), drops the database and the cluster's Redis keys, removes the working directory. */
  async close(): Promise<void> {
    await Promise.all(this.nodes.filter((n) => n.child).map((n) => n.kill()));
    await this.db.drop();
    await dropRedisPrefix(this.cacheUrl, this.prefix);
    rmSync(this.cwd, { recursive: true, force: true });
  }
}
