import type { DataSource } from 'typeorm';
import { CacheService } from '../../src/cache/cache.service';
import { DatabaseService } from '../../src/database/database.service';
import { DEMO_DATAVIEWS } from '../../src/database/seed/demo-data';
import { authHeaders, signin, TENANT } from '../support/auth';
import { startTestApp, TestApp } from '../support/test-app';

type Rec = Record<string, any>;

/**
 * `GET /api/v1/dataviews/{dvc_code}/config` (spec §4.4, §2.9 variant B, §8): the tenant's row over the
 * system row, live and active rows only, cached per tenant, with an ETag and 304 on If-None-Match.
 */
describe('Dataview configuration (spec §4.4)', () => {
  let t: TestApp;
  let ds: DataSource;
  let cache: CacheService;
  const token: Record<string, string> = {};

  const get = (code: string, who = 'acme', headers: Record<string, string> = {}) =>
    t.app.inject({
      method: 'GET',
      url: `/api/v1/dataviews/${code}/config`,
      headers: {
        ...authHeaders(who === 'acme' ? TENANT.acme : TENANT.globex, token[who]),
        ...headers,
      },
    });
  const insert = async (row: Rec): Promise<number> => {
    await ds
      .createQueryBuilder()
      .insert()
      .into('app_dataview_configs')
      .values({
        dvc_is_default: false,
        dvc_status: 1,
        dvc_is_deleted: 0,
        dvc_source_entity: 'customers',
        ...row,
      })
      .execute();
    const [last] = await ds
      .createQueryBuilder()
      .select('d.dvc_id', 'id')
      .from('app_dataview_configs', 'd')
      .orderBy('d.dvc_id', 'DESC')
      .limit(1)
      .getRawMany<{ id: unknown }>();
    return Number(last.id);
  };
  const update = (id: number, set: Rec) =>
    ds.createQueryBuilder().update('app_dataview_configs').set(set).where('dvc_id = :id', { id }).execute();
  /** What the cache holds for dataviews goes: the next read sees the database. */
  const dropCache = () => cache.deletePattern(`${cache.keys.prefix}:dataview*`);

  beforeAll(async () => {
    t = await startTestApp({ label: 'dataview-config' });
    ds = t.app.get(DatabaseService).dataSource;
    cache = t.app.get(CacheService);
    token.acme = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    token.globex = (await signin(t.app, TENANT.globex, 'admin@globex.test')).token;
  });

  afterAll(async () => {
    await t?.close();
  });

  it.each(DEMO_DATAVIEWS.map((d) => [d.code, d] as const))(
    'should answer %s as {dvc_code, dvc_description, config} with dvc_config parsed',
    async (code, demo) => {
      const res = await get(code);
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(Object.keys(body)).toEqual(['success', 'data', 'meta']);
      expect(body.data).toEqual({ dvc_code: code, dvc_description: demo.description, config: demo.config });
      expect(res.headers.etag).toMatch(/^"[A-Za-z0-9_-]{20,}"$/);
    },
  );

  it('should answer 304 without a body when If-None-Match names the current ETag', async () => {
    const etag = (await get('customers_grid')).headers.etag as string;
    for (const header of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const res = await get('customers_grid', 'acme', { 'if-none-match': header });
      expect({ header, status: res.statusCode, body: res.body, etag: res.headers.etag }).toEqual({
        header,
        status: 304,
        body: '',
        etag,
      });
    }
    expect((await get('customers_grid', 'acme', { 'if-none-match': '"stale"' })).statusCode).toBe(200);
    // Another dataview, another ETag; the same dataview for another tenant, the same configuration.
    expect((await get('orders_grid')).headers.etag).not.toBe(etag);
    expect((await get('customers_grid', 'globex')).headers.etag).toBe(etag);
  });

  it.each(['no_such_grid', 'a%20b', '..', 'x'.repeat(99), 'customers_grid%00'])(
    'should answer 404 NOT_FOUND for %s',
    async (code) => {
      const res = await get(code);
      expect([res.statusCode, res.json().error.code]).toEqual([404, 'NOT_FOUND']);
    },
  );

  it('should prefer the tenant’s row over the system row, among live and active rows only', async () => {
    const config = (name: string) => ({ dataviewName: name, columns: [{ fieldCode: 'name' }] });
    await insert({
      dvc_tenant_id: null,
      dvc_code: 'layered',
      dvc_description: 'system',
      dvc_config: JSON.stringify(config('system')),
    });
    const own = await insert({
      dvc_tenant_id: 1,
      dvc_code: 'layered',
      dvc_description: 'acme',
      dvc_config: JSON.stringify(config('acme')),
    });
    await insert({
      dvc_tenant_id: 1,
      dvc_code: 'layered',
      dvc_description: 'acme later',
      dvc_config: JSON.stringify(config('acme 2')),
    });
    await insert({ dvc_tenant_id: 2, dvc_code: 'layered', dvc_description: 'globex', dvc_config: '{}' });
    await insert({
      dvc_tenant_id: 1,
      dvc_code: 'LAYERED',
      dvc_description: 'another code',
      dvc_config: '{}',
    });
    const description = async (who = 'acme'): Promise<unknown> =>
      (await get('layered', who)).json().data?.dvc_description;
    expect(await description()).toBe('acme');
    expect(await description('globex')).toBe('globex');
    for (const [set, expected] of [
      [{ dvc_is_deleted: 1 }, 'acme later'],
      [{ dvc_is_deleted: 0 }, 'acme'],
      [{ dvc_status: 0 }, 'acme later'],
      [{ dvc_status: -1 }, 'acme later'],
      [{ dvc_status: 1 }, 'acme'],
    ] as const) {
      await update(own, set);
      await dropCache();
      expect({ set, description: await description() }).toEqual({ set, description: expected });
    }
  });

  it('should cache the configuration under {prefix}:dataview:{tenantId}:{id} and serve it from there', async () => {
    const id = await insert({
      dvc_tenant_id: 1,
      dvc_code: 'cached_grid',
      dvc_description: 'v1',
      dvc_config: '{"a":1}',
    });
    const first = await get('cached_grid');
    expect(first.json().data).toEqual({ dvc_code: 'cached_grid', dvc_description: 'v1', config: { a: 1 } });
    const cached = await cache.getJson<Rec>(cache.keys.dataviewConfig(TENANT.acme, id));
    expect(cached).toMatchObject({ id, code: 'cached_grid', config: { a: 1 } });
    expect(await cache.getJson(cache.keys.dataviewCode(TENANT.acme, 'cached_grid'))).toEqual({ id });
    expect(await cache.store.ttl(cache.keys.dataviewConfig(TENANT.acme, id))).toBeGreaterThan(3500);

    await update(id, { dvc_description: 'v2', dvc_config: '{"a":2}' });
    expect((await get('cached_grid')).json().data.dvc_description).toBe('v1');
    await cache.delete([cache.keys.dataviewConfig(TENANT.acme, id)]);
    const second = await get('cached_grid');
    expect(second.json().data).toEqual({ dvc_code: 'cached_grid', dvc_description: 'v2', config: { a: 2 } });
    expect(second.headers.etag).not.toBe(first.headers.etag);
    expect(
      (await get('cached_grid', 'acme', { 'if-none-match': first.headers.etag as string })).statusCode,
    ).toBe(200);
  });

  it('should treat a row whose dvc_config is not a JSON object as not found', async () => {
    await insert({ dvc_tenant_id: 1, dvc_code: 'broken_grid', dvc_config: '{"columns": [' });
    await insert({ dvc_tenant_id: 1, dvc_code: 'array_grid', dvc_config: '[1, 2]' });
    await insert({ dvc_tenant_id: 1, dvc_code: 'empty_grid', dvc_config: null });
    for (const code of ['broken_grid', 'array_grid', 'empty_grid'])
      expect({ code, status: (await get(code)).statusCode }).toEqual({ code, status: 404 });
  });
});
