import { TENANT, tenantHeader } from '../support/auth';
import { listRoutes, RouteInfo } from '../support/routes';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * Default-deny (STYLE): a route is protected unless it is explicitly public, and the public ones
 * are exactly these. A new public route must be added here on purpose.
 */
const PUBLIC_ROUTES = new Set([
  'GET /healthz',
  'GET /readyz',
  'GET /livez',
  'GET /health',
  'GET /api/v1/health',
  'GET /health/db',
  'GET /health/redis',
  'GET /metrics',
  'GET /api/v1/auth/tenant-config',
  'POST /api/v1/auth/signin',
  'POST /api/v1/auth/signup-otp',
  'POST /api/v1/auth/create-account',
]);
/** Public routes outside any tenant: no x-tenant-id needed. */
const UNTENANTED_ROUTES = new Set([...PUBLIC_ROUTES].filter((r) => !r.includes('/api/v1/auth/')));

describe('Route protection (default-deny)', () => {
  let t: TestApp;
  let routes: RouteInfo[];

  beforeAll(async () => {
    // Every route is called without credentials several times: more failures from one address than
    // the default budget of ADDRESS_FAILURE_POINTS, which abuse-limits.e2e-spec tests on its own.
    t = await startTestApp({ label: 'routes', env: { ADDRESS_FAILURE_POINTS: '100000' } });
    routes = listRoutes(t.app);
  });

  afterAll(async () => {
    await t?.close();
  });

  const name = (r: RouteInfo) => `${r.method} ${r.path}`;
  const url = (r: RouteInfo) => r.path.replace(/\{[^}]+\}/g, '1');

  it('should find the routes of the app', () => {
    expect(routes.length).toBeGreaterThanOrEqual(12);
  });

  it('should mark public only the routes on the public list', () => {
    const publicRoutes = routes
      .filter((r) => r.isPublic)
      .map(name)
      .sort();
    expect(publicRoutes).toEqual(
      routes
        .map(name)
        .filter((n) => PUBLIC_ROUTES.has(n))
        .sort(),
    );
  });

  it('should exempt from the tenant header only the public probe and metrics routes', () => {
    const untenanted = routes
      .filter((r) => r.noTenant)
      .map(name)
      .sort();
    expect(untenanted).toEqual(
      routes
        .map(name)
        .filter((n) => UNTENANTED_ROUTES.has(n))
        .sort(),
    );
  });

  it('should answer every protected route with 401 without a token', async () => {
    const protectedRoutes = routes.filter((r) => !r.isPublic);
    expect(protectedRoutes.length).toBeGreaterThan(0);
    for (const r of protectedRoutes) {
      const res = await t.app.inject({
        method: r.method as 'GET',
        url: url(r),
        headers: { 'x-tenant-id': tenantHeader(TENANT.acme) },
        payload: r.method === 'GET' ? undefined : {},
      });
      expect({ route: name(r), status: res.statusCode, code: res.json().error?.code }).toEqual({
        route: name(r),
        status: 401,
        code: 'UNAUTHORIZED',
      });
    }
  });

  it('should answer every tenant route with 400 without the tenant header', async () => {
    for (const r of routes.filter((x) => !x.noTenant)) {
      const res = await t.app.inject({
        method: r.method as 'GET',
        url: url(r),
        payload: r.method === 'GET' ? undefined : {},
      });
      expect({ route: name(r), status: res.statusCode, details: res.json().error?.details }).toEqual({
        route: name(r),
        status: 400,
        details: { 'x-tenant-id': 'required' },
      });
    }
  });
});
