import { ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildService, freePort } from '../support/service-cluster';
import { waitFor } from '../support/test-app';

const ROOT = join(__dirname, '..', '..');

interface Running {
  child: ChildProcess;
  stdout: () => string;
  exited: Promise<number | null>;
}

/**
 * `npm start` and `npm run proxy` from one directory with nothing set up (issue 20 #7): the proxy
 * must reach the service wherever its port was set — in a `.env` both read, or only in the
 * service's own environment — and follow it to another port after a restart.
 */
describe('The tenant proxy process follows the service (npm run proxy)', () => {
  let cwd: string;
  const running: Running[] = [];

  beforeAll(() => {
    buildService();
    cwd = mkdtempSync(join(tmpdir(), 'mtb-proxy-upstream-'));
  });

  afterAll(() => {
    for (const r of running) r.child.kill('SIGKILL');
    rmSync(cwd, { recursive: true, force: true });
  });

  function run(script: string, env: Record<string, string> = {}): Running {
    const child = spawn(process.execPath, [join(ROOT, 'dist', ...script.split('/'))], {
      cwd,
      // The embedded default in development, as a newcomer runs it: secrets generated into ./data.
      env: { PATH: process.env.PATH ?? '', HOME: cwd, LOG_FORMAT: 'json', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const r = { child, stdout: () => out, exited };
    running.push(r);
    return r;
  }

  async function startService(port: number, env: Record<string, string> = {}): Promise<Running> {
    const service = run('main.js', env);
    await waitFor(async () => {
      const res = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined);
      return res?.status === 200;
    }, 60000);
    return service;
  }

  async function stop(r: Running): Promise<void> {
    r.child.kill('SIGTERM');
    expect(await r.exited).toBe(0);
  }

  async function startProxy(proxyPort: number): Promise<Running> {
    const proxy = run('tenant/proxy/proxy-main.js', { PROXY_PORT: String(proxyPort), LOG_LEVEL: 'error' });
    await waitFor(async () => proxy.stdout().includes('Tenant proxy'), 20000);
    return proxy;
  }

  /** acme's public tenant configuration through the proxy: the service answers it. */
  function throughProxy(proxyPort: number): Promise<{ status: number; code?: string }> {
    // node:http, not fetch: fetch does not let a caller set Host.
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: proxyPort,
          path: '/api/v1/auth/tenant-config',
          headers: { host: 'acme.localhost' },
          agent: false,
        },
        (res) => {
          let text = '';
          res.on('data', (d: Buffer) => (text += d.toString()));
          res.on('end', () => {
            const body = JSON.parse(text) as { error?: { code: string } };
            resolve({ status: res.statusCode ?? 0, code: body.error?.code });
          });
        },
      );
      req.on('error', reject);
      req.end();
    });
  }

  it('should reach the service on the API_PORT of a .env both read', async () => {
    const port = await freePort();
    writeFileSync(join(cwd, '.env'), `API_PORT=${port}\n`);
    const service = await startService(port);
    try {
      // Without the service's own record: the proxy has only the configuration to go by.
      rmSync(join(cwd, 'data', '.service.json'));
      const proxyPort = await freePort();
      const proxy = await startProxy(proxyPort);
      expect(proxy.stdout()).toContain(
        `-> http://127.0.0.1:${port} (API_HOST:API_PORT: no service started in this directory is running`,
      );
      expect(await throughProxy(proxyPort)).toEqual({ status: 200, code: undefined });
      await stop(proxy);
    } finally {
      rmSync(join(cwd, '.env'));
      await stop(service);
    }
  });

  it("should follow a port set only in the service's environment, also to another port after a restart", async () => {
    const [first, second, proxyPort] = [await freePort(), await freePort(), await freePort()];
    let service = await startService(first, { API_PORT: String(first) });
    const record = join(cwd, 'data', '.service.json');
    expect(JSON.parse(readFileSync(record, 'utf8'))).toMatchObject({
      url: `http://127.0.0.1:${first}`,
      pid: service.child.pid,
    });
    const proxy = await startProxy(proxyPort);
    try {
      expect(proxy.stdout()).toContain(
        `-> the service started in this directory (now http://127.0.0.1:${first})`,
      );
      expect(await throughProxy(proxyPort)).toEqual({ status: 200, code: undefined });

      await stop(service);
      expect(existsSync(record)).toBe(false); // removed on a graceful stop
      // Nothing listens on the configured default now: the service is unreachable.
      expect(await throughProxy(proxyPort)).toEqual({ status: 502, code: 'SERVICE_ERROR' });

      service = await startService(second, { API_PORT: String(second) });
      await waitFor(async () => (await throughProxy(proxyPort)).status === 200, 5000);
      expect(await throughProxy(proxyPort)).toEqual({ status: 200, code: undefined });
    } finally {
      await stop(proxy);
      await stop(service);
    }
  });
});
