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
    const documented = Object.keys(doc.paths).sort();
    expect(documented).toEqual(
      [
        '/api/v1/health',
        '/health',
        '/health/db',
        '/health/redis',
        '/healthz',
        '/livez',
        '/metrics',
        '/readyz',
      ].sort(),
    );
    expect(doc.paths['/readyz'].get.responses['503']).toBeDefined();
    expect(doc.paths['/metrics'].get.responses['503']).toBeDefined();
    expect(doc.components.schemas.ErrorEnvelopeDto).toBeDefined();
  });
});
