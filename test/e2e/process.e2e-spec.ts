import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../support/test-app';

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
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'ignore' });
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
