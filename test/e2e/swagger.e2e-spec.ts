import { ENTITY_EXTENSION } from '../../src/openapi/entity-document';
import { listRoutes } from '../support/routes';
import { startTestApp, TestApp } from '../support/test-app';

describe('API documentation (/api-docs)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ label: 'swagger' });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('should serve the Swagger UI', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api-docs' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('text/html');
    expect(res.body).toContain('swagger');
  });

  it('should serve the OpenAPI document with bearer and x-tenant-id security schemes', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api-docs/json' });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.components.securitySchemes.tenant).toMatchObject({
      type: 'apiKey',
      in: 'header',
      name: 'x-tenant-id',
    });
  });

  it('should document every route the app serves, with its error answers', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/api-docs/json' })).json();
    const served = listRoutes(t.app).map((r) => `${r.method} ${r.path}`);
    // The registry's entities also have typed paths (x-entity-code), served by the generic routes.
    const documented = Object.entries(
      doc.paths as Record<string, Record<string, Record<string, unknown>>>,
    ).flatMap(([path, ops]) =>
      Object.entries(ops)
        .filter(([, op]) => op[ENTITY_EXTENSION] === undefined)
        .map(([m]) => `${m.toUpperCase()} ${path}`),
    );
    expect(served.length).toBeGreaterThan(8);
    expect(documented.sort()).toEqual(served.sort());
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const op of Object.values(ops)) {
        expect({ path, has500: '500' in op.responses }).toEqual({ path, has500: true });
      }
    }
    expect(doc.components.schemas.ErrorEnvelopeDto).toBeDefined();
  });

  it('should declare the security of every tenant and protected route', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/api-docs/json' })).json();
    for (const r of listRoutes(t.app)) {
      const security = (doc.paths[r.path][r.method.toLowerCase()].security ?? []).flatMap((s: object) =>
        Object.keys(s),
      );
      if (!r.noTenant)
        expect({ route: `${r.method} ${r.path}`, security }).toEqual({
          route: `${r.method} ${r.path}`,
          security: expect.arrayContaining(['tenant']),
        });
      if (!r.isPublic)
        expect({ route: `${r.method} ${r.path}`, security }).toEqual({
          route: `${r.method} ${r.path}`,
          security: expect.arrayContaining(['bearer']),
        });
    }
  });
});
