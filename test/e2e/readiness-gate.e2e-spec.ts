import { ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { startTestApp, TestApp, waitFor } from '../support/test-app';

async function freePort(): Promise<number> {
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

/** Spec §3.3: 503 NOT_READY everywhere but the probes until redis, externalDbs and cache are set. */
describe('Readiness gate (spec §3.3)', () => {
  let t: TestApp;
  let port: number;
  let redis: ChildProcess | undefined;

  beforeAll(async () => {
    port = await freePort();
    t = await startTestApp({
      label: 'gate',
      waitForStartup: false,
      env: {
        CACHE_URL: `redis://127.0.0.1:${port}`,
        CACHE_STARTUP_MAX_ATTEMPTS: '200',
        CACHE_STARTUP_RETRY_MS: '100',
      },
    });
  });

  afterAll(async () => {
    await t?.close();
    redis?.kill('SIGTERM');
  });

  const get = (url: string) => t.app.inject({ method: 'GET', url });

  it('should answer /healthz with 200 while the cache is down', async () => {
    const res = await get('/healthz');
    expect(res.statusCode).toBe(200);
    expect(res.json().info.process.ready).toBe(false);
  });

  it('should answer /readyz and /livez with 503 and show the cache store (the redis flag) down', async () => {
    const ready = await get('/readyz');
    expect(ready.statusCode).toBe(503);
    expect(ready.json().error['cache-store']).toEqual({
      status: 'down',
      kind: 'redis',
      flag: 'redis',
      message: 'not ready',
    });
    expect((await get('/livez')).statusCode).toBe(503);
  });

  it.each(['/api-docs', '/metrics', '/health', '/api/v1/anything', '/no/such/route'])(
    'should answer %s with 503 NOT_READY',
    async (url) => {
      const res = await get(url);
      expect(res.statusCode).toBe(503);
      expect(res.headers['retry-after']).toBe('5');
      const body = res.json();
      expect(body.success).toBe(false);
      expect(body.error.code).toBe('NOT_READY');
      expect(body.error.details).toEqual(expect.objectContaining({ redis: false }));
    },
  );

  it('should become ready in the same process once the cache appears', async () => {
    redis = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      {
        stdio: 'ignore',
      },
    );
    await waitFor(async () => (await get('/readyz')).statusCode === 200, 30000, 200);
    expect((await get('/livez')).statusCode).toBe(200);
    expect((await get('/health/redis')).json().details['cache-store']).toEqual({
      status: 'up',
      kind: 'redis',
    });
    expect((await get('/no/such/route')).statusCode).toBe(404);
  });
});
