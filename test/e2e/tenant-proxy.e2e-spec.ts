import Fastify, { type FastifyInstance } from 'fastify';
import { ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { seedDemo } from '../../src/database/seed/demo-seed';
import { DatabaseTenantSource, TenantDirectory } from '../../src/tenant/proxy/tenant-directory';
import { buildTenantProxy } from '../../src/tenant/proxy/tenant-proxy';
import { decryptTenantHeader, encryptTenantHeader } from '../../src/tenant/tenant-header.crypto';
import { waitFor } from '../support/test-app';
import { createTestDatabase, migratedDataSource, TEST_SECRETS, TestDatabase } from '../support/test-database';

const ROOT = join(__dirname, '..', '..');
const KEY = TEST_SECRETS.TENANT_ENCRYPTION_KEY;

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  json: any;
}

/** A raw HTTP request: fetch() cannot set the Host header, the thing the proxy routes on. */
function send(
  port: number,
  options: { method?: string; path?: string; headers?: Record<string, string | string[]>; body?: string },
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method: options.method ?? 'GET',
        path: options.path ?? '/',
        headers: options.headers,
        agent: false,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
      },
    );
    req.on('error', reject);
    if (options.body !== undefined) req.write(options.body);
    req.end();
  });
}

function portOf(app: FastifyInstance): number {
  return (app.server.address() as AddressInfo).port;
}

/** The stand-in service: decrypts the header it receives and echoes the request. */
async function startEcho(): Promise<{ app: FastifyInstance; hits: () => number }> {
  let hits = 0;
  const app = Fastify({ logger: false });
  app.addContentTypeParser('text/plain', { parseAs: 'string' }, (_req, body, done) => done(null, body));
  app.all('/*', async (request, reply) => {
    hits += 1;
    const raw = request.headers['x-tenant-id'];
    let tenant: { id: string; timestamp?: number } | { error: string };
    try {
      tenant = decryptTenantHeader(Array.isArray(raw) ? raw.join(',') : raw, KEY);
    } catch (err) {
      tenant = { error: (err as Error).message };
    }
    reply.header('x-request-id', request.headers['x-request-id'] ?? 'none');
    return {
      tenantId: 'id' in tenant ? tenant.id : undefined,
      tenant,
      method: request.method,
      url: request.url,
      body: request.body ?? null,
      headers: request.headers,
    };
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, hits: () => hits };
}

function expectNotFoundEnvelope(answer: Answer, requestId?: string): void {
  expect(answer.status).toBe(404);
  expect(answer.json).toEqual({
    success: false,
    message: expect.any(String),
    error: { code: 'NOT_FOUND', message: answer.json.message, details: null },
    meta: { timestamp: expect.any(String), requestId: requestId ?? expect.any(String) },
  });
  expect(new Date(answer.json.meta.timestamp).toISOString()).toBe(answer.json.meta.timestamp);
  expect(answer.headers['x-request-id']).toBe(answer.json.meta.requestId);
}

describe('Tenant proxy (D7)', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let echo: { app: FastifyInstance; hits: () => number };
  let proxy: FastifyInstance;
  let port: number;
  let lookups = 0;

  beforeAll(async () => {
    db = await createTestDatabase('tenant-proxy');
    ds = await migratedDataSource(db);
    await seedDemo(ds, { password: 'Proxy-Test-Passw0rd!' });
    echo = await startEcho();
    const source = new DatabaseTenantSource(ds);
    const directory = new TenantDirectory(
      async (code) => {
        lookups += 1;
        return source.lookup(code);
      },
      { ttlMs: 30_000, missTtlMs: 5_000 },
    );
    proxy = await buildTenantProxy({
      upstream: `http://127.0.0.1:${portOf(echo.app)}`,
      baseDomain: 'localhost',
      tenantEncryptionKey: KEY,
      resolveTenant: (code) => directory.resolve(code),
    });
    await proxy.listen({ host: '127.0.0.1', port: 0 });
    port = portOf(proxy);
  });

  afterAll(async () => {
    await proxy?.close();
    await echo?.app.close();
    if (ds?.isInitialized) await ds.destroy();
    await db?.drop();
  });

  it.each([
    ['acme.localhost', '1'],
    ['acme.localhost:8080', '1'],
    ['globex.localhost', '2'],
    ['GLOBEX.localhost', '2'],
  ])('should send Host %s to the service as tenant %s', async (host, tenantId) => {
    const answer = await send(port, { path: '/api/v1/auth/tenant-config', headers: { host } });
    expect(answer.status).toBe(200);
    expect(answer.json.tenantId).toBe(tenantId);
    expect(answer.json.method).toBe('GET');
    expect(answer.json.url).toBe('/api/v1/auth/tenant-config');
    // Fresh headers carry the time, for TENANT_HEADER_MAX_AGE_S (D6).
    expect(Math.abs(answer.json.tenant.timestamp - Date.now() / 1000)).toBeLessThan(60);
    expect(answer.json.headers['x-forwarded-host']).toBe(host);
  });

  it.each([
    ['initech.localhost', 'an inactive tenant'],
    ['nosuchtenant.localhost', 'an unknown tenant'],
    ['localhost', 'no tenant label'],
    ['localhost:8080', 'no tenant label'],
    ['127.0.0.1', 'an IP address'],
    ['www.acme.localhost', 'a label too deep'],
    ['acme.example.com', 'another domain'],
  ])('should answer 404 to Host %s (%s) without contacting the service', async (host) => {
    const before = echo.hits();
    const answer = await send(port, { method: 'POST', path: '/api/v1/auth/signin', headers: { host } });
    expectNotFoundEnvelope(answer);
    expect(echo.hits()).toBe(before);
  });

  it('should keep a sane client x-request-id in the 404 envelope', async () => {
    const answer = await send(port, {
      headers: { host: 'initech.localhost', 'x-request-id': 'req-404.test' },
    });
    expectNotFoundEnvelope(answer, 'req-404.test');
  });

  it('should replace a forged x-tenant-id with its own', async () => {
    const forged = encryptTenantHeader(2, KEY);
    const answer = await send(port, {
      path: '/api/v1/entity/customers',
      headers: { host: 'acme.localhost', 'x-tenant-id': forged },
    });
    expect(answer.status).toBe(200);
    expect(answer.json.tenantId).toBe('1');
    expect(answer.json.headers['x-tenant-id']).not.toBe(forged);
  });

  it('should drop every client x-tenant-id, however it is sent', async () => {
    const answer = await send(port, {
      headers: {
        host: 'globex.localhost',
        'x-tenant-id': [encryptTenantHeader(1, KEY), 'not even json'],
        // A hop-by-hop trick: Connection names the header so that a naive proxy drops its own.
        connection: 'x-tenant-id',
      },
    });
    expect(answer.status).toBe(200);
    expect(answer.json.tenantId).toBe('2');
    expect(typeof answer.json.headers['x-tenant-id']).toBe('string');
  });

  it('should pass the method, path, query, body, other headers and x-request-id through', async () => {
    const body = JSON.stringify({ name: 'Zoë', nested: { n: 1, list: [1, 2] } });
    const answer = await send(port, {
      method: 'POST',
      path: '/api/v1/entity/customers/records?limit=10&skip=20&q=a%20b',
      headers: {
        host: 'acme.localhost',
        'content-type': 'application/json',
        authorization: 'Bearer abc.def.ghi',
        'x-request-id': 'trace-123.abc',
        'x-custom': 'kept',
      },
      body,
    });
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject({
      tenantId: '1',
      method: 'POST',
      url: '/api/v1/entity/customers/records?limit=10&skip=20&q=a%20b',
      body: JSON.parse(body),
    });
    expect(answer.json.headers).toMatchObject({
      authorization: 'Bearer abc.def.ghi',
      'x-request-id': 'trace-123.abc',
      'x-custom': 'kept',
      'content-type': 'application/json',
    });
    expect(answer.headers['x-request-id']).toBe('trace-123.abc');
  });

  it('should pass a non-JSON body and other methods through untouched', async () => {
    const put = await send(port, {
      method: 'PUT',
      path: '/things/7',
      headers: { host: 'globex.localhost', 'content-type': 'text/plain' },
      body: 'plain text, not JSON {',
    });
    expect(put.json).toMatchObject({ tenantId: '2', method: 'PUT', body: 'plain text, not JSON {' });
    const del = await send(port, {
      method: 'DELETE',
      path: '/things/7',
      headers: { host: 'globex.localhost' },
    });
    expect(del.json).toMatchObject({ tenantId: '2', method: 'DELETE', url: '/things/7' });
  });

  it('should give the forwarded request an x-request-id when the client sent none', async () => {
    const answer = await send(port, { headers: { host: 'acme.localhost' } });
    expect(answer.json.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('should cache tenant lookups, hits and misses', async () => {
    await send(port, { headers: { host: 'acme.localhost' } });
    await send(port, { headers: { host: 'nosuchtenant2.localhost' } });
    const before = lookups;
    for (let i = 0; i < 3; i += 1) {
      await send(port, { headers: { host: 'acme.localhost' } });
      await send(port, { headers: { host: 'nosuchtenant2.localhost' } });
    }
    expect(lookups).toBe(before);
  });

  it('should find only active tenants that are not soft-deleted', async () => {
    const source = new DatabaseTenantSource(ds);
    const setInitech = (status: number, deleted: number) =>
      ds
        .createQueryBuilder()
        .update('app_tenants')
        .set({ tnt_status: status, tnt_is_deleted: deleted })
        .where('tnt_tenant_code = :code', { code: 'initech' })
        .execute();
    expect(await source.lookup('initech')).toBeUndefined();
    try {
      await setInitech(1, 1);
      expect(await source.lookup('initech')).toBeUndefined();
      await setInitech(1, 0);
      expect(await source.lookup('initech')).toBe(3);
    } finally {
      await setInitech(0, 0);
    }
    expect(await source.lookup('acme')).toBe(1);
    expect(await source.lookup('no-such')).toBeUndefined();
  });
});

describe('Tenant proxy failures', () => {
  it('should answer 502 in the envelope when the service is down', async () => {
    // The upstream holds its port (so no parallel test can bind it and answer
    // in its place) and resets every connection, as a crashed service does.
    const dead = createServer((socket) => socket.resetAndDestroy());
    await new Promise<void>((resolve) => dead.listen(0, '127.0.0.1', resolve));
    const deadPort = (dead.address() as AddressInfo).port;
    const proxy = await buildTenantProxy({
      upstream: `http://127.0.0.1:${deadPort}`,
      baseDomain: 'localhost',
      tenantEncryptionKey: KEY,
      resolveTenant: async () => 1,
    });
    await proxy.listen({ host: '127.0.0.1', port: 0 });
    try {
      const answer = await send(portOf(proxy), {
        headers: { host: 'acme.localhost', 'x-request-id': 'down-1' },
      });
      expect(answer.status).toBe(502);
      expect(answer.json).toMatchObject({
        success: false,
        error: { code: 'SERVICE_ERROR', details: null },
        meta: { requestId: 'down-1' },
      });
    } finally {
      await proxy.close();
      await new Promise((resolve) => dead.close(resolve));
    }
  });

  it('should answer 503 in the envelope when the tenant lookup fails', async () => {
    const proxy = await buildTenantProxy({
      upstream: 'http://127.0.0.1:1',
      baseDomain: 'localhost',
      tenantEncryptionKey: KEY,
      resolveTenant: async () => {
        throw new Error('database down');
      },
    });
    await proxy.listen({ host: '127.0.0.1', port: 0 });
    try {
      const answer = await send(portOf(proxy), { headers: { host: 'acme.localhost' } });
      expect(answer.status).toBe(503);
      expect(answer.headers['retry-after']).toBe('5');
      expect(answer.json).toMatchObject({ success: false, error: { code: 'SERVICE_ERROR', details: null } });
      expect(answer.text).not.toContain('database down');
    } finally {
      await proxy.close();
    }
  });

  it('should refuse to start with a malformed key', async () => {
    await expect(
      buildTenantProxy({
        upstream: 'http://127.0.0.1:1',
        baseDomain: 'localhost',
        tenantEncryptionKey: 'short',
        resolveTenant: async () => 1,
      }),
    ).rejects.toThrow(/TENANT_ENCRYPTION_KEY/);
  });
});

describe('The built CLI and proxy processes (npm run tenant-header, npm run proxy)', () => {
  let cwd: string;
  const baseEnv = (): Record<string, string> => ({
    PATH: process.env.PATH ?? '',
    HOME: cwd,
    NODE_ENV: 'test',
    ...TEST_SECRETS,
  });

  beforeAll(() => {
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'ignore' });
    cwd = mkdtempSync(join(tmpdir(), 'mtb-tenant-proxy-'));
  });

  afterAll(() => {
    rmSync(cwd, { recursive: true, force: true });
  });

  function cli(args: string[], env: Record<string, string> = baseEnv()) {
    return spawnSync(process.execPath, [join(ROOT, 'dist', 'tenant', 'cli', 'tenant-header.js'), ...args], {
      cwd,
      env,
      encoding: 'utf8',
    });
  }

  it('should print only a header that decrypts to the tenant id with the configured key', () => {
    const run = cli(['7']);
    expect(run.status).toBe(0);
    expect(run.stderr).toBe('');
    expect(run.stdout.endsWith('\n')).toBe(true);
    expect(run.stdout.trim().split('\n')).toHaveLength(1);
    expect(decryptTenantHeader(run.stdout.trim(), KEY)).toEqual({ type: 'tenant', id: '7' });
  });

  it('should put the time into the payload with --timestamp', () => {
    const run = cli(['7', '--timestamp']);
    expect(run.status).toBe(0);
    const payload = decryptTenantHeader(run.stdout.trim(), KEY);
    expect(payload.id).toBe('7');
    expect(Math.abs((payload.timestamp ?? 0) - Date.now() / 1000)).toBeLessThan(60);
    expect(decryptTenantHeader(cli(['7', '--timestamp=1600000000']).stdout.trim(), KEY).timestamp).toBe(
      1600000000,
    );
  });

  it.each([[['abc']], [[]], [['0']], [['1', '2']], [['1', '--bogus']]])(
    'should exit 1 on %p, stdout empty',
    (args) => {
      const run = cli(args);
      expect(run.status).toBe(1);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/^tenant-header: /);
    },
  );

  it('should exit 1 on a bad configuration, naming the variable', () => {
    const run = cli(['7'], { ...baseEnv(), TENANT_ENCRYPTION_KEY: 'nope' });
    expect(run.status).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain('TENANT_ENCRYPTION_KEY');
  });

  describe('proxy-main', () => {
    let db: TestDatabase;
    let echo: { app: FastifyInstance; hits: () => number };
    let child: ChildProcess | undefined;

    beforeAll(async () => {
      db = await createTestDatabase('tenant-proxy-main');
      const ds = await migratedDataSource(db);
      try {
        await seedDemo(ds, { password: 'Proxy-Test-Passw0rd!' });
      } finally {
        await ds.destroy();
      }
      echo = await startEcho();
    });

    afterAll(async () => {
      child?.kill('SIGKILL');
      await echo?.app.close();
      await db?.drop();
    });

    it('should start, print one line, proxy a tenant request and stop on SIGTERM', async () => {
      const proxyPort = 20000 + Math.floor(Math.random() * 20000);
      const upstream = `http://127.0.0.1:${portOf(echo.app)}`;
      child = spawn(process.execPath, [join(ROOT, 'dist', 'tenant', 'proxy', 'proxy-main.js')], {
        cwd,
        env: {
          ...baseEnv(),
          ...db.env,
          LOG_LEVEL: 'error',
          PROXY_HOST: '127.0.0.1',
          PROXY_PORT: String(proxyPort),
          PROXY_UPSTREAM: upstream,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
      const exited = new Promise<number | null>((resolve) => child?.on('exit', (code) => resolve(code)));

      await waitFor(async () => out.includes('\n'), 20000);
      // A loopback bind is shown as localhost, the form <tenant_code>.localhost takes.
      expect(out).toContain(`Tenant proxy http://localhost:${proxyPort} -> ${upstream} (`);
      expect(out).toContain('<tenant_code>.localhost');
      expect(out.trim().split('\n')).toHaveLength(1);

      const answer = await send(proxyPort, { path: '/x?y=1', headers: { host: 'globex.localhost' } });
      expect(answer.status).toBe(200);
      expect(answer.json).toMatchObject({ tenantId: '2', url: '/x?y=1' });
      expectNotFoundEnvelope(await send(proxyPort, { headers: { host: 'initech.localhost' } }));

      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(err).toBe('');
    });
  });
});
