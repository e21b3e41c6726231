import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { encryptTenantHeader } from '../../src/tenant/tenant-header.crypto';
import { DEMO_PASSWORD, TENANT } from '../support/auth';
import { buildService } from '../support/service-cluster';
import { waitFor } from '../support/test-app';
import { TEST_SECRETS } from '../support/test-database';

const ROOT = join(__dirname, '..', '..');
const MAIN = join(ROOT, 'dist', 'main.js');

interface Running {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

function start(cwd: string, env: Record<string, string>): Running {
  const child = spawn(process.execPath, [MAIN], {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: cwd, LOG_FORMAT: 'json', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** The built service as `npm start` runs it: banner, embedded default, seed, shutdown, bad config. */
describe('The service process (npm start)', () => {
  let cwd: string;
  const port = 20000 + Math.floor(Math.random() * 20000);

  beforeAll(() => {
    buildService();
    cwd = mkdtempSync(join(tmpdir(), 'mtb-process-'));
  });

  afterAll(() => {
    rmSync(cwd, { recursive: true, force: true });
  });

  it('should start with no set-up on the embedded default, print the banner, seed, and become ready', async () => {
    const run = start(cwd, { API_PORT: String(port) });
    try {
      await waitFor(async () => {
        const res = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined);
        return res?.status === 200;
      }, 30000);
      // The child's log lines reach this process through a pipe, possibly after /readyz answers.
      await waitFor(async () => /Ready in \d+ ms/.test(run.stdout()), 10000);
      const out = run.stdout();
      expect(out).toContain(`Service     http://localhost:${port}`);
      // Outside production only this machine can reach it (issue 20 #6).
      expect(out).toContain(`Listening   127.0.0.1:${port} (this machine only; API_HOST=0.0.0.0 exposes it)`);
      expect(out).toContain('Mode        embedded (SQLite + in-process cache)');
      expect(out).toContain('Database    sqlite ./data/app.sqlite');
      expect(out).toContain('Cache       in-process');
      expect(out).toContain(`API docs    http://localhost:${port}/api-docs`);
      expect(out).toMatch(/Demo users {2}\(password: .+\)/);
      expect(out).toContain('admin@acme.test');
      expect(out).toContain('Migration applied: InitialSchema');
      expect(out).toContain('Demo data seeded');
      expect(out).toMatch(/Ready in \d+ ms/);
      // Probes are not logged; other requests are, with their request id.
      await fetch(`http://127.0.0.1:${port}/health/db`);
      await waitFor(async () => run.stdout().includes('"url":"/health/db"'), 5000);
      expect(run.stdout()).not.toContain('"url":"/readyz"');

      run.child.kill('SIGTERM');
      const started = Date.now();
      expect(await run.exited).toBe(0);
      expect(Date.now() - started).toBeLessThan(10000);
      expect(run.stdout()).toContain('SIGTERM received: shutting down');
    } finally {
      run.child.kill('SIGKILL');
    }
  });

  it('should find the demo data already there on the next start (idempotent seed)', async () => {
    const run = start(cwd, { API_PORT: String(port) });
    try {
      await waitFor(async () => /Ready in \d+ ms/.test(run.stdout()), 30000);
      expect(run.stdout()).toContain('Demo data already present');
      expect(run.stdout()).not.toContain('Migration applied');
    } finally {
      run.child.kill('SIGTERM');
      await run.exited;
    }
  });

  it('should still refuse a logged-out token after a restart on the embedded default (D46)', async () => {
    // Explicit secrets instead of the generated ./data/.dev-secrets.json, to build the header here.
    const env = { API_PORT: String(port), ...TEST_SECRETS };
    const base = `http://127.0.0.1:${port}/api/v1/auth`;
    const header = { 'x-tenant-id': encryptTenantHeader(TENANT.acme, TEST_SECRETS.TENANT_ENCRYPTION_KEY) };
    const signin = async (): Promise<string> => {
      const res = await fetch(`${base}/signin`, {
        method: 'POST',
        headers: { ...header, 'content-type': 'application/json' },
        body: JSON.stringify({ email_id: 'admin@acme.test', password: DEMO_PASSWORD }),
      });
      expect(res.status).toBe(200);
      return ((await res.json()) as { data: { token: string } }).data.token;
    };
    const profile = async (token: string) => {
      const res = await fetch(`${base}/profile`, {
        headers: { ...header, authorization: `Bearer ${token}` },
      });
      return { status: res.status, code: ((await res.json()) as { error?: { code: string } }).error?.code };
    };
    const ready = (run: Running) => waitFor(async () => /Ready in \d+ ms/.test(run.stdout()), 30000);
    /** The service's own database file, opened while the service is down. */
    const sqlite = async <T>(work: (db: DataSource) => Promise<T>): Promise<T> => {
      const db = new DataSource({ type: 'better-sqlite3', database: join(cwd, 'data', 'app.sqlite') });
      await db.initialize();
      try {
        return await work(db);
      } finally {
        await db.destroy();
      }
    };
    const stop = async (run: Running) => {
      run.child.kill('SIGTERM');
      expect(await run.exited).toBe(0);
    };

    const first = start(cwd, env);
    let token: string;
    try {
      await ready(first);
      token = await signin();
      const out = await fetch(`${base}/logout`, {
        method: 'POST',
        headers: { ...header, authorization: `Bearer ${token}` },
      });
      expect(out.status).toBe(200);
      expect(await profile(token)).toEqual({ status: 401, code: 'TOKEN_REVOKED' });
      await stop(first);
    } finally {
      first.child.kill('SIGKILL');
    }

    // While it is down: a revocation that expired meanwhile, for the start-up purge.
    await sqlite((db) =>
      db.query(
        `INSERT INTO app_revoked_tokens (rvk_tenant_id, rvk_user_id, rvk_jti, rvk_expires_at, rvk_created_at)
         VALUES (1, 1, 'expired-before-restart', '2000-01-01 00:00:00.000', '2000-01-01 00:00:00.000')`,
      ),
    );

    const second = start(cwd, env);
    try {
      await ready(second);
      expect(await profile(token)).toEqual({ status: 401, code: 'TOKEN_REVOKED' });
      expect(await profile(await signin())).toEqual({ status: 200, code: undefined });
      await stop(second);
    } finally {
      second.child.kill('SIGKILL');
    }
    const jtis: Array<{ jti: string }> = await sqlite((db) =>
      db.query('SELECT rvk_jti AS jti FROM app_revoked_tokens'),
    );
    expect(jtis.map((r) => r.jti)).not.toContain('expired-before-restart');
    expect(jtis).toHaveLength(1);
  });

  it('should refuse to start on bad configuration, naming every bad variable', async () => {
    const run = start(cwd, { API_PORT: 'eighty', DB_TYPE: 'oracle', NODE_ENV: 'production' });
    expect(await run.exited).toBe(1);
    const err = run.stderr();
    expect(err).toContain('API_PORT: must be an integer');
    expect(err).toContain('DB_TYPE: must be one of');
    expect(err).toContain('JWT_SECRET: required');
    expect(err).toContain('TENANT_ENCRYPTION_KEY: required');
    expect(err).not.toMatch(/\n\s+at /);
  });
});
