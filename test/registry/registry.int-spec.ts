import { Logger } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { CACHE_TTL } from '../../src/cache/cache-keys';
import { CacheService } from '../../src/cache/cache.service';
import { loadConfig } from '../../src/config/config.schema';
import { DatabaseService } from '../../src/database/database.service';
import { seedDemo } from '../../src/database/seed/demo-seed';
import { RegistryRepository } from '../../src/registry/registry.repository';
import { REGISTRY_NEGATIVE_TTL_S, RegistryService } from '../../src/registry/registry.service';
import {
  createTestDatabase,
  migratedDataSource,
  TEST_SECRETS,
  testCacheUrl,
  TestDatabase,
} from '../support/test-database';

type Value = string | number | null;

/** Every column of a registry row, in one order (inserts without metadata bind positionally). */
const ROW_DEFAULTS: Record<string, Value> = {
  obj_tenant_id: null,
  obj_code: '',
  obj_description: null,
  obj_type_code: 'TABLE',
  obj_connection_code: null,
  obj_payload: null,
  obj_payload_object_name: null,
  obj_payload_identifier: null,
  obj_payload_column_prefix: null,
  obj_payload_table: null,
  obj_name: null,
  obj_db_key: null,
  obj_db_type: null,
  obj_connection_id: null,
  obj_status: 1,
  obj_is_deleted: 0,
  obj_audit_data: null,
  obj_add_dtls: null,
};

/** A usable entity definition on demo_customers, for rows that are not the demo's. */
const CUSTOMERS_LIKE: Record<string, Value> = {
  obj_payload_table: 'demo_customers',
  obj_payload_column_prefix: 'cus_',
  obj_payload_identifier: 'cus_id',
  obj_payload: JSON.stringify({ fields: [{ name: 'id', column: 'cus_id', type: 'integer' }] }),
};

describe(RegistryService.name, () => {
  let db: TestDatabase;
  let ds: DataSource;
  let cache: CacheService;
  let repository: RegistryRepository;
  let service: RegistryService;

  async function insertRow(values: Record<string, Value>): Promise<number> {
    const row = { ...ROW_DEFAULTS, ...values };
    await ds
      .createQueryBuilder()
      .insert()
      .into('app_object_registries', Object.keys(row))
      .values(row)
      .execute();
    const [{ id }] = await ds.query<Array<{ id: number }>>(
      'SELECT MAX(obj_id) AS id FROM app_object_registries',
    );
    return Number(id);
  }

  const setDescription = (id: number, description: string) =>
    ds
      .createQueryBuilder()
      .update('app_object_registries')
      .set({ obj_description: description })
      .where('obj_id = :id', { id })
      .execute();

  beforeAll(async () => {
    db = await createTestDatabase('registry');
    ds = await migratedDataSource(db);
    await seedDemo(ds, { password: 'Registry-Test-Passw0rd!' });
    const cacheUrl = testCacheUrl();
    cache = new CacheService(
      loadConfig({
        ...TEST_SECRETS,
        NODE_ENV: 'test',
        CACHE_KEY_PREFIX: `test-${randomBytes(4).toString('hex')}`,
        ...(cacheUrl ? { CACHE_URL: cacheUrl } : {}),
        ...db.env,
      }),
    );
    // Redis (TEST_CACHE=redis) connects in the background: wait for it, as start-up does.
    for (let attempt = 0; ; attempt++) {
      try {
        await cache.ping();
        break;
      } catch (err) {
        if (attempt >= 50) throw err;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    repository = new RegistryRepository({ dataSource: ds } as DatabaseService);
    service = new RegistryService(repository, cache);
  });

  afterAll(async () => {
    await cache?.onApplicationShutdown();
    await ds?.destroy();
    await db?.drop();
  });

  afterEach(() => jest.restoreAllMocks());

  describe('resolve', () => {
    it('should resolve the demo customers with the fields, columns and relations of docs/demo-data.md', async () => {
      const info = await service.resolve('1', 'customers');
      expect(info).toMatchObject({
        code: 'customers',
        registryTenantId: null,
        description: 'Customers',
        type: 'TABLE',
        supported: true,
        connectionCode: 'default',
        table: 'demo_customers',
        primaryKeyColumn: 'cus_id',
        prefix: 'cus_',
        maintainedBy: 'tenant',
        relations: [{ entity: 'orders', foreignKey: 'customer_id', onDelete: 'restrict' }],
        columns: {
          tenant: 'cus_tenant_id',
          status: 'cus_status',
          isDeleted: 'cus_is_deleted',
          auditData: 'cus_audit_data',
          addDtls: 'cus_add_dtls',
          lastModified: 'cus_last_modified',
        },
      });
      expect(info!.fields.map((f) => [f.name, f.column])).toEqual([
        ['id', 'cus_id'],
        ['name', 'cus_name'],
        ['email', 'cus_email'],
        ['phone', 'cus_phone'],
        ['tier', 'cus_tier'],
        ['credit_limit', 'cus_credit_limit'],
        ['internal_notes', 'cus_internal_notes'],
      ]);
      expect(service.fieldByName(info!, 'name')).toMatchObject({
        type: 'text',
        required: true,
        maxLength: 100,
      });
      expect(service.fieldByName(info!, 'email')).toMatchObject({ type: 'email', unique: true });
      expect(service.fieldByName(info!, 'tier')).toMatchObject({
        type: 'select',
        valueSet: 'customer_tiers',
      });
      expect(service.columnOf(info!, 'credit_limit')).toBe('cus_credit_limit');
      expect(service.columnOf(info!, 'cus_name')).toBeUndefined();
    });

    it('should resolve the system-maintained demo users', async () => {
      const users = await service.resolve('1', 'users');
      expect(users).toMatchObject({ table: 'app_users', primaryKeyColumn: 'usr_id', maintainedBy: 'system' });
      expect(service.fieldByName(users!, 'password_hash')).toMatchObject({ hidden: true });
    });

    it('should answer undefined for an unknown code, another case of a code, or a code that cannot be one', async () => {
      expect(await service.resolve('1', 'no_such_entity')).toBeUndefined();
      expect(await service.resolve('1', 'CUSTOMERS')).toBeUndefined();
      expect(await service.resolve('1', 'customers ')).toBeUndefined();
      expect(await service.resolve('1', "customers' OR '1'='1")).toBeUndefined();
      expect(await service.resolve('1; DROP TABLE x', 'customers')).toBeUndefined();
    });
  });

  describe('tenant rows (D20)', () => {
    let overrideId: number;

    beforeAll(async () => {
      overrideId = await insertRow({
        obj_tenant_id: 2,
        obj_code: 'orders',
        obj_description: 'Globex orders',
        obj_payload: JSON.stringify({
          fields: [
            { name: 'status', maxLength: 20 },
            { name: 'amount', max: 1000000 },
            { name: 'created', column: 'ord_last_modified', type: 'date', readOnly: true },
          ],
        }),
      });
      // A code only tenant 2 has.
      await insertRow({ obj_tenant_id: 2, obj_code: 'leads', ...CUSTOMERS_LIKE });
      // Overrides that must not apply: soft-deleted (tenant 1), inactive and archived (tenant 3).
      await insertRow({
        obj_tenant_id: 1,
        obj_code: 'orders',
        obj_description: 'Deleted',
        obj_is_deleted: 1,
      });
      await insertRow({ obj_tenant_id: 3, obj_code: 'orders', obj_description: 'Inactive', obj_status: 0 });
      await insertRow({ obj_tenant_id: 3, obj_code: 'orders', obj_description: 'Archived', obj_status: -1 });
    });

    it("should merge tenant 2's row over the system row for tenant 2", async () => {
      const info = await service.resolve('2', 'orders');
      expect(info).toMatchObject({
        registryId: overrideId,
        registryTenantId: '2',
        description: 'Globex orders',
        table: 'demo_orders',
        primaryKeyColumn: 'ord_id',
      });
      expect(info!.fields.map((f) => f.name)).toEqual([
        'id',
        'customer_id',
        'amount',
        'status',
        'ordered_at',
        'created',
      ]);
      expect(service.fieldByName(info!, 'status')).toMatchObject({
        column: 'ord_order_status',
        valueSet: 'order_status',
        maxLength: 20,
      });
      expect(service.fieldByName(info!, 'amount')).toMatchObject({ required: true, min: 0, max: 1000000 });
      expect(service.columnOf(info!, 'created')).toBe('ord_last_modified');
    });

    it('should give tenants 1 and 3 the system row, ignoring deleted, inactive and archived overrides', async () => {
      for (const tenant of ['1', '3']) {
        const info = await service.resolve(tenant, 'orders');
        expect(info).toMatchObject({ registryTenantId: null, description: 'Orders' });
        expect(info!.fields.map((f) => f.name)).toEqual([
          'id',
          'customer_id',
          'amount',
          'status',
          'ordered_at',
        ]);
        expect(service.fieldByName(info!, 'status')?.maxLength).toBeUndefined();
      }
    });

    it("should never show one tenant's own code to another", async () => {
      expect(await service.resolve('2', 'leads')).toMatchObject({ code: 'leads', registryTenantId: '2' });
      expect(await service.resolve('1', 'leads')).toBeUndefined();
      expect(await service.resolve('3', 'leads')).toBeUndefined();
      expect(await repository.findCandidates('1', 'leads')).toEqual([]);
    });

    it("should select only system rows and the caller's rows, system rows first", async () => {
      // A tenant row older (lower id) than the system row of its code.
      await insertRow({ obj_tenant_id: 2, obj_code: 'late', obj_description: 'tenant', ...CUSTOMERS_LIKE });
      await insertRow({
        obj_tenant_id: null,
        obj_code: 'late',
        obj_description: 'system',
        ...CUSTOMERS_LIKE,
      });
      expect(
        (await repository.findCandidates('2', 'late')).map((r) => [r.obj_tenant_id, r.obj_description]),
      ).toEqual([
        [null, 'system'],
        [2, 'tenant'],
      ]);
      expect((await repository.findCandidates('1', 'orders')).map((r) => r.obj_tenant_id)).toEqual([null]);
      expect(await service.resolve('2', 'late')).toMatchObject({
        description: 'tenant',
        registryTenantId: '2',
      });
      expect(await service.resolve('1', 'late')).toMatchObject({
        description: 'system',
        registryTenantId: null,
      });
    });

    it('should list the codes each tenant can see', async () => {
      const acme = await service.listCodes('1');
      expect(acme).toEqual(expect.arrayContaining(['customers', 'orders', 'roles', 'users', 'late']));
      expect(acme).not.toContain('leads');
      expect(await service.listCodes('2')).toContain('leads');
      expect(acme).toEqual([...acme].sort());
      expect(new Set(acme).size).toBe(acme.length);
    });
  });

  describe('rows that are not live or not usable', () => {
    it('should ignore soft-deleted and inactive system rows', async () => {
      await insertRow({ obj_code: 'ghost', obj_is_deleted: 1, ...CUSTOMERS_LIKE });
      await insertRow({ obj_code: 'dormant', obj_status: 0, ...CUSTOMERS_LIKE });
      expect(await service.resolve('1', 'ghost')).toBeUndefined();
      expect(await service.resolve('1', 'dormant')).toBeUndefined();
      const codes = await service.listCodes('1');
      expect(codes).not.toContain('ghost');
      expect(codes).not.toContain('dormant');
    });

    it('should treat an entity with an unsafe column as not found and log why', async () => {
      const error = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
      await insertRow({
        obj_code: 'broken',
        ...CUSTOMERS_LIKE,
        obj_payload: JSON.stringify({
          fields: [{ name: 'name', column: 'cus_name; DROP TABLE x', type: 'text' }],
        }),
      });
      expect(await service.resolve('1', 'broken')).toBeUndefined();
      expect(error).toHaveBeenCalledTimes(1);
      expect(JSON.stringify(error.mock.calls[0])).toContain('not a plain identifier');
    });

    it('should mark an unsupported obj_db_type and warn once per code', async () => {
      const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
      await insertRow({ obj_code: 'mongo_things', obj_db_type: 'mongodb', ...CUSTOMERS_LIKE });
      await insertRow({ obj_code: 'oracle_things', obj_db_type: 'Oracle', ...CUSTOMERS_LIKE });
      expect(await service.resolve('1', 'mongo_things')).toMatchObject({
        supported: false,
        dbType: 'mongodb',
        fields: [],
      });
      expect(await service.resolve('2', 'mongo_things')).toMatchObject({ supported: false });
      await service.invalidate('mongo_things');
      expect(await service.resolve('1', 'mongo_things')).toMatchObject({ supported: false });
      expect(await service.resolve('1', 'oracle_things')).toMatchObject({
        supported: false,
        dbType: 'oracle',
      });
      const unsupportedWarnings = warn.mock.calls.filter((c) =>
        JSON.stringify(c).includes('Unsupported obj_db_type'),
      );
      expect(unsupportedWarnings.map((c) => (c[0] as { entityCode: string }).entityCode)).toEqual([
        'mongo_things',
        'oracle_things',
      ]);
    });
  });

  describe('cache', () => {
    let customersId: number;

    beforeAll(async () => {
      const [{ id }] = await ds.query<Array<{ id: number }>>(
        "SELECT obj_id AS id FROM app_object_registries WHERE obj_code = 'customers' AND obj_tenant_id IS NULL",
      );
      customersId = Number(id);
    });

    it('should serve a resolved entity from the cache under {prefix}:registry:{tenant}:{code}', async () => {
      await service.invalidateAll();
      const first = await service.resolve('1', 'customers');
      const key = cache.keys.config('registry', '1', 'customers');
      expect(await cache.getJson(key)).toEqual({ info: first });
      const ttl = await cache.store.ttl(key);
      expect(ttl).toBeGreaterThan(CACHE_TTL.registry - 60);
      expect(ttl).toBeLessThanOrEqual(CACHE_TTL.registry);

      const findCandidates = jest.spyOn(repository, 'findCandidates');
      await setDescription(customersId, 'Customers (renamed)');
      const second = await service.resolve('1', 'customers');
      expect(findCandidates).not.toHaveBeenCalled();
      expect(second).toEqual(first);
    });

    it("should drop every tenant's entry of a code on invalidate", async () => {
      await service.resolve('1', 'customers');
      await service.resolve('2', 'customers');
      await service.resolve('1', 'orders');
      expect(await service.invalidate('customers')).toBe(2);
      expect(await cache.getJson(cache.keys.config('registry', '1', 'customers'))).toBeUndefined();
      expect(await cache.getJson(cache.keys.config('registry', '2', 'customers'))).toBeUndefined();
      expect(await cache.getJson(cache.keys.config('registry', '1', 'orders'))).toBeDefined();
      expect((await service.resolve('1', 'customers'))?.description).toBe('Customers (renamed)');
    });

    it("should drop one tenant's entry when given the tenant", async () => {
      await service.resolve('2', 'customers');
      await setDescription(customersId, 'Customers');
      expect(await service.invalidate('customers', '2')).toBe(1);
      expect((await service.resolve('2', 'customers'))?.description).toBe('Customers');
      expect((await service.resolve('1', 'customers'))?.description).toBe('Customers (renamed)');
      await service.invalidate('customers');
    });

    it('should remember an unknown code for a short time only', async () => {
      expect(await service.resolve('1', 'newcomer')).toBeUndefined();
      const key = cache.keys.config('registry', '1', 'newcomer');
      expect(await cache.getJson(key)).toEqual({ info: null });
      const ttl = await cache.store.ttl(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(REGISTRY_NEGATIVE_TTL_S);

      await insertRow({ obj_code: 'newcomer', ...CUSTOMERS_LIKE });
      expect(await service.resolve('1', 'newcomer')).toBeUndefined();
      await service.invalidate('newcomer');
      expect(await service.resolve('1', 'newcomer')).toMatchObject({ code: 'newcomer', supported: true });
    });

    it('should not refill the cache with rows read before an invalidation', async () => {
      await service.invalidate('customers');
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const original = repository.findCandidates.bind(repository);
      jest.spyOn(repository, 'findCandidates').mockImplementation(async (tenantId, code) => {
        const rows = await original(tenantId, code);
        await gate;
        return rows;
      });
      const pending = service.resolve('1', 'customers');
      await new Promise((resolve) => setTimeout(resolve, 50));
      await service.invalidate('customers');
      release();
      await pending;
      expect(await cache.getJson(cache.keys.config('registry', '1', 'customers'))).toBeUndefined();
    });
  });
});
