import { DatabaseService } from '../../src/database/database.service';
import { startTestApp, TestApp } from '../support/test-app';
import { testCacheUrl } from '../support/test-database';

describe('Probes and operations (spec §4.6, D19, D40)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ label: 'probes' });
  });

  afterAll(async () => {
    await t?.close();
  });

  const get = (url: string, headers: Record<string, string> = {}) =>
    t.app.inject({ method: 'GET', url, headers });

  it('should answer /healthz with 200 and report startupMode', async () => {
    const res = await get('/healthz');
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.status).toBe('ok');
    expect(['embedded', 'server']).toContain(body.info.process.startupMode);
    expect(body.info.process.ready).toBe(true);
  });

  it('should answer /readyz with 200 and list the three flags once started, each named by what it checks', async () => {
    const res = await get('/readyz');
    expect(res.statusCode).toBe(200);
    const kind = testCacheUrl() ? 'redis' : 'memory';
    // The spec's `redis` flag is set by whichever cache store is configured (D2): shown as such.
    expect(res.json().details).toEqual({
      'cache-store': { status: 'up', kind, flag: 'redis' },
      externalDbs: { status: 'up' },
      cache: { status: 'up' },
    });
  });

  it('should answer /livez with 200 after SELECT 1 and PING, listing the three flags too', async () => {
    const res = await get('/livez');
    expect(res.statusCode).toBe(200);
    const kind = testCacheUrl() ? 'redis' : 'memory';
    expect(res.json().details).toEqual({
      'cache-store': { status: 'up', kind, flag: 'redis' },
      externalDbs: { status: 'up' },
      cache: { status: 'up' },
      database: { status: 'up', dialect: expect.any(String) },
    });
  });

  it.each(['/health', '/health/db', '/health/redis', '/api/v1/health'])(
    'should answer %s with 200',
    async (url) => {
      const res = await get(url);
      expect(res.statusCode).toBe(200);
      expect(res.json().status).toBe('ok');
    },
  );

  it('should echo a sane x-request-id and generate one otherwise', async () => {
    expect((await get('/healthz', { 'x-request-id': 'abc-123' })).headers['x-request-id']).toBe('abc-123');
    const generated = (await get('/healthz', { 'x-request-id': 'bad id with spaces <script>' })).headers[
      'x-request-id'
    ];
    expect(generated).toMatch(/^[0-9a-f-]{36}$/);
    const missing = await get('/no/such/route');
    expect(missing.headers['x-request-id']).toBe(missing.json().meta.requestId);
  });

  it('should expose Prometheus metrics with request count and latency by route and status', async () => {
    await get('/health/db');
    const res = await get('/metrics');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('text/plain');
    expect(res.body).toMatch(
      /http_requests_total\{method="GET",route="\/health\/db",status_code="200"\} \d+/,
    );
    expect(res.body).toContain('http_request_duration_seconds_bucket');
    expect(res.body).toMatch(/cache_up\{kind="(memory|redis)"\} 1/);
    expect(res.body).toMatch(/service_readiness\{flag="cache"\} 1/);
  });

  it('should have seeded the demo data on start-up', async () => {
    const rows: Array<{ n: number | string }> = await t.app
      .get(DatabaseService)
      .dataSource.query('SELECT COUNT(*) AS n FROM app_tenants');
    expect(Number(rows[0].n)).toBe(3);
  });
});
