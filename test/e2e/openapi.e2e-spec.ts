import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { ERROR_STATUS, ErrorCode } from '../../src/common/errors/error-codes';
import { DatabaseService } from '../../src/database/database.service';
import { ENTITY_EXTENSION } from '../../src/openapi/entity-document';
import { buildTenantProxy } from '../../src/tenant/proxy/tenant-proxy';
import { authHeaders, DEMO_PASSWORD, signin, TENANT } from '../support/auth';
import { startTestApp, TestApp, waitFor } from '../support/test-app';
import { TEST_SECRETS } from '../support/test-database';

type Json = Record<string, any>;
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];
const ROOT = resolve(__dirname, '..', '..');

function operations(doc: Json): Array<{ path: string; method: string; op: Json }> {
  return Object.entries(doc.paths as Record<string, Json>).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m]).map((method) => ({ path, method, op: item[method] as Json })),
  );
}

/**
 * The OpenAPI document as an integrator and a client generator use it (issue 15 item 1): ids,
 * security, parameters, error codes, per-entity schemas regenerated on reload, and Redocly's
 * recommended rules without a finding.
 */
describe('OpenAPI document (/api-docs/json)', () => {
  let t: TestApp;
  const doc = async (): Promise<Json> =>
    (await t.app.inject({ method: 'GET', url: '/api-docs/json' })).json();

  beforeAll(async () => {
    t = await startTestApp({ label: 'openapi' });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('should give every operation a unique camelCase operationId and a tag', async () => {
    const ops = operations(await doc());
    const ids = ops.map((o) => o.op.operationId as string);
    expect(ids.every((id) => /^[a-z][A-Za-z0-9]+$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(
      expect.arrayContaining(['signIn', 'listRecords', 'getRecord', 'updateRecord', 'getDataviewData']),
    );
    for (const { op } of ops) expect(op.tags?.length).toBeGreaterThan(0);
  });

  it('should require the tenant header and the token together, the tenant alone on public routes, nothing on probes', async () => {
    const d = await doc();
    expect(d.paths['/api/v1/{entity_code}'].get.security).toEqual([{ bearer: [], tenant: [] }]);
    expect(d.paths['/api/v1/auth/signin'].post.security).toEqual([{ tenant: [] }]);
    for (const path of ['/healthz', '/readyz', '/livez', '/metrics'])
      expect(d.paths[path].get.security).toEqual([]);
    const ticketed = ['/api/v1/{entity_code}/changes', '/api/v1/dataviews/{dvc_code}/changes'];
    for (const { path, op } of operations(d)) {
      // Two requirement objects are read as either/or: only the change streams take one (the
      // tenant header and the token, or a ticket alone, D55); everything else needs both together.
      if (ticketed.includes(path)) expect(op.security).toEqual([{ bearer: [], tenant: [] }, { ticket: [] }]);
      else expect({ path, security: op.security.length <= 1 }).toEqual({ path, security: true });
    }
  });

  it('should document the list parameters, filters as a deepObject', async () => {
    const params = (await doc()).paths['/api/v1/{entity_code}'].get.parameters as Json[];
    expect(params.find((p) => p.name === 'filters')).toMatchObject({
      in: 'query',
      style: 'deepObject',
      explode: true,
      schema: { type: 'object' },
    });
    expect(params.map((p) => p.name as string)).toEqual(
      expect.arrayContaining(['entity_code', 'filters', 'limit', 'skip', 'sortBy', 'sortOrder']),
    );
  });

  it('should answer the filter of the documented deepObject form', async () => {
    const { token } = await signin(t.app, TENANT.acme, 'admin@acme.test');
    const res = await t.app.inject({
      method: 'GET',
      url: '/api/v1/customers?filters[tier]=gold&limit=2&sortBy=name&sortOrder=desc',
      headers: authHeaders(TENANT.acme, token),
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().data.records.every((r: Json) => r.tier === 'gold')).toBe(true);
  });

  it('should give each error status examples of its real codes, x-request-id on every answer', async () => {
    const d = await doc();
    const seen = new Set<string>();
    for (const { path, method, op } of operations(d)) {
      expect(Object.keys(op.responses).some((s) => s.startsWith('2'))).toBe(true);
      for (const [status, response] of Object.entries(op.responses as Record<string, Json>)) {
        expect({ path, method, status, header: !!response.headers?.['x-request-id'] }).toEqual({
          path,
          method,
          status,
          header: true,
        });
        if (Number(status) < 400) continue;
        const media = response.content['application/json'];
        // The probes answer 503 with their health body, not the error envelope.
        if (media.schema.$ref !== '#/components/schemas/ErrorEnvelopeDto') continue;
        const examples = response.content['application/json'].examples as Record<string, Json>;
        expect(Object.keys(examples).length).toBeGreaterThan(0);
        for (const example of Object.values(examples)) {
          const code = example.value.error.code as ErrorCode;
          expect({ path, method, status, code, at: ERROR_STATUS[code] }).toEqual({
            path,
            method,
            status,
            code,
            at: Number(status),
          });
          seen.add(`${status} ${code}`);
        }
      }
    }
    expect([...seen]).toEqual(
      expect.arrayContaining([
        '400 VALIDATION_ERROR',
        '401 UNAUTHORIZED',
        '403 FORBIDDEN',
        '404 NOT_FOUND',
        '409 CONFLICT',
        '413 PAYLOAD_TOO_LARGE',
        '415 UNSUPPORTED_MEDIA_TYPE',
        '429 RATE_LIMITED',
        '500 SERVICE_ERROR',
        '503 NOT_READY',
        '503 OVERLOADED',
      ]),
    );
    const v400 = d.paths['/api/v1/{entity_code}'].post.responses['400'].content['application/json'].examples;
    expect(v400.VALIDATION_ERROR.value.error.details).toEqual(
      expect.arrayContaining([{ field: 'email', error: 'is required' }]),
    );
    const r429 = d.paths['/api/v1/{entity_code}'].get.responses['429'];
    expect(r429.headers['Retry-After']).toBeDefined();
    expect(r429.content['application/json'].examples.RATE_LIMITED.value.message).toBe(
      'Too many requests for this tenant',
    );
  });

  it('should document ETag where If-None-Match applies, downloads and metrics by their media types', async () => {
    const d = await doc();
    for (const path of [
      '/api/v1/{entity_code}/{id}',
      '/api/v1/customers/{id}',
      '/api/v1/config/value-sets/{code}',
    ]) {
      expect(d.paths[path].get.responses['200'].headers.ETag).toBeDefined();
      expect(d.paths[path].get.responses['304'].headers.ETag).toBeDefined();
    }
    expect(
      d.paths['/api/v1/{entity_code}/{id}'].get.responses['200'].content['application/json'].schema,
    ).toBeDefined();
    expect(Object.keys(d.paths['/metrics'].get.responses['200'].content)).toEqual(['text/plain']);
    const download = d.paths['/api/v1/downloads/{file_id}'].get.responses;
    expect(Object.keys(download['200'].content)).toEqual(
      expect.arrayContaining(['text/csv', 'application/pdf']),
    );
    expect(download['200'].headers['Content-Disposition']).toBeDefined();
    expect(Object.keys(download['404'].content)).toEqual(['application/json']);
  });

  it('should type the registry’s entities: customers and orders with enums from their value sets', async () => {
    const d = await doc();
    const s = d.components.schemas;
    // An optional select field may hold NULL: OpenAPI 3.0.3 wants null in the enum of a nullable schema.
    expect(s.Customer.properties.tier).toMatchObject({
      type: 'string',
      nullable: true,
      enum: ['bronze', 'silver', 'gold', null],
    });
    expect(s.Customer.properties.email).toMatchObject({ type: 'string', format: 'email' });
    expect(s.CustomerInput.required).toEqual(['name', 'email']);
    expect(s.Order.properties.status.enum).toEqual(['new', 'paid', 'shipped', 'cancelled', null]);
    expect(s.OrderInput.required).toEqual(['customer_id', 'amount']);
    // users.password_hash is hidden: never in the document.
    expect(s.User.properties.password_hash).toBeUndefined();
    const get = d.paths['/api/v1/customers/{id}'].get;
    expect(get.operationId).toBe('getCustomer');
    expect(get.responses['200'].content['application/json'].schema.properties.data).toEqual({
      $ref: '#/components/schemas/Customer',
    });
    expect(d.paths['/api/v1/orders'].post.requestBody.content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/OrderInput',
    });
  });

  it('should add a newly registered entity, with its fields, after a catalog reload', async () => {
    const ds = t.app.get(DatabaseService).dataSource;
    const row = await ds
      .createQueryBuilder()
      .select('*')
      .from('app_object_registries', 'r')
      .where('r.obj_code = :code AND r.obj_tenant_id IS NULL', { code: 'customers' })
      .getRawOne<Json>();
    const payload = typeof row!.obj_payload === 'string' ? JSON.parse(row!.obj_payload) : row!.obj_payload;
    // A field of its own (the registry is not checked against the table until a record is read).
    payload.fields.push({ name: 'vip_since', column: 'cus_vip_since', type: 'date' });
    const { obj_id: _id, ...copy } = row!;
    await ds
      .createQueryBuilder()
      .insert()
      .into('app_object_registries')
      .values({
        ...copy,
        obj_code: 'prospects',
        obj_description: 'Prospects',
        obj_payload: JSON.stringify(payload),
      })
      .execute();
    expect((await doc()).components.schemas.Prospect).toBeUndefined();

    const { token } = await signin(t.app, TENANT.acme, 'root@acme.test');
    const reload = await t.app.inject({
      method: 'POST',
      url: '/api/cache/reload',
      headers: authHeaders(TENANT.acme, token),
    });
    expect(reload.statusCode).toBe(200);
    await waitFor(async () => (await doc()).components.schemas.Prospect !== undefined, 5000);
    const d = await doc();
    expect(d.components.schemas.Prospect.properties.vip_since).toMatchObject({ type: 'string' });
    expect(d.components.schemas.ProspectInput.required).toEqual(['name', 'email']);
    expect(d.paths['/api/v1/prospects'].get).toMatchObject({
      operationId: 'listProspects',
      [ENTITY_EXTENSION]: 'prospects',
    });
    // Swagger UI's copy is the same document.
    const ui = await t.app.inject({ method: 'GET', url: '/api-docs/swagger-ui-init.js' });
    expect(ui.body).toContain('listProspects');
  });

  it('should list ready-made tenant headers in Swagger UI outside production, never in the JSON document', async () => {
    const ui = await t.app.inject({ method: 'GET', url: '/api-docs/swagger-ui-init.js' });
    expect(ui.body).toContain('ready-made');
    expect(ui.body).toContain('acme');
    expect(JSON.stringify(await doc())).not.toContain('ready-made');
  });

  it('should be usable through the development tenant proxy, which adds the tenant header', async () => {
    await t.app.listen(0, '127.0.0.1');
    const proxy = await buildTenantProxy({
      upstream: await t.app.getUrl(),
      baseDomain: 'localhost',
      tenantEncryptionKey: TEST_SECRETS.TENANT_ENCRYPTION_KEY,
      resolveTenant: (code) => Promise.resolve(code === 'acme' ? Number(TENANT.acme) : undefined),
    });
    try {
      const host = { host: 'acme.localhost:8080' };
      const ui = await proxy.inject({ method: 'GET', url: '/api-docs', headers: host });
      expect(ui.statusCode).toBe(200);
      const json = await proxy.inject({ method: 'GET', url: '/api-docs/json', headers: host });
      expect(json.json().paths['/api/v1/customers']).toBeDefined();
      // What Swagger UI sends with only the token scheme authorised: no x-tenant-id of its own.
      const signedIn = await proxy.inject({
        method: 'POST',
        url: '/api/v1/auth/signin',
        headers: { ...host, 'content-type': 'application/json' },
        payload: JSON.stringify({ email_id: 'admin@acme.test', password: DEMO_PASSWORD }),
      });
      expect(signedIn.statusCode).toBe(200);
      const list = await proxy.inject({
        method: 'GET',
        url: '/api/v1/customers?filters[tier]=gold&limit=1',
        headers: { ...host, authorization: `Bearer ${signedIn.json().data.token as string}` },
      });
      expect(list.statusCode).toBe(200);
    } finally {
      await proxy.close();
    }
  });

  it('should pass Redocly’s recommended rules with no error and no warning', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'openapi-lint-'));
    try {
      mkdirSync(join(dir, 'client'));
      writeFileSync(join(dir, 'client', 'openapi.json'), JSON.stringify(await doc(), null, 2));
      copyFileSync(join(ROOT, 'redocly.yaml'), join(dir, 'redocly.yaml'));
      copyFileSync(join(ROOT, '.redocly.lint-ignore.yaml'), join(dir, '.redocly.lint-ignore.yaml'));
      const cli = join(ROOT, 'node_modules', '@redocly', 'cli', 'bin', 'cli.js');
      const { stdout } = await promisify(execFile)(
        process.execPath,
        [cli, 'lint', 'client/openapi.json', '--format=json'],
        {
          cwd: dir,
          env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
          maxBuffer: 64 * 1024 * 1024,
        },
      ).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }));
      const report = JSON.parse(stdout.slice(stdout.indexOf('{'))) as Json;
      const problems = (report.problems as Json[]).map((p) => `${p.ruleId}: ${p.message}`);
      expect(problems).toEqual([]);
      expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
