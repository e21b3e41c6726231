import { DataSource } from 'typeorm';
import { ConnectionsService } from '../../src/database/connections/connections.service';
import { DatabaseService } from '../../src/database/database.service';
import { authHeaders, signin, TENANT } from '../support/auth';
import {
  CONNECTION_TEST_KEY,
  configDbWith,
  connectionTypeOf,
  connectionUrlOf,
  externalTestDatabase,
  remoteCustomersEntity,
  seedExternalCustomers,
} from '../support/connections';
import { listRoutes, RouteInfo } from '../support/routes';
import { startTestApp, TestApp } from '../support/test-app';
import type { TestDatabase } from '../support/test-database';

/**
 * The isolation matrix, generated from the registered entity routes: for every route and every
 * demo entity, a user of one tenant tries to read, list, filter, sort, update, delete (with and
 * without cascade), create against, read the history of, restore and undelete (D56), and page
 * through the cache into another tenant's rows.
 * Every attempt must fail or return only the caller's own rows, and afterwards the victim
 * tenant's rows must be exactly as before. A new entity route without attacks fails the test.
 * One entity lives on an external connection (D3), in a database of another dialect.
 */
interface EntitySpec {
  code: string;
  table: string;
  tenantColumn: string;
  idColumn: string;
  /** A harmless field change for updates. */
  change: Record<string, unknown>;
  /** A create body that points at a victim row or names the tenant. */
  create: (victimId: number) => Record<string, unknown>;
  /** app_connections code of the entity's database (D3); the configuration database when absent. */
  connection?: string;
}

const CUSTOMERS: EntitySpec = {
  code: 'customers',
  table: 'demo_customers',
  tenantColumn: 'cus_tenant_id',
  idColumn: 'cus_id',
  change: { name: 'Hijacked' },
  create: () => ({ name: 'Intruder', email: 'intruder@evil.example', tenant_id: 1, cus_tenant_id: 1 }),
};

const ENTITIES: EntitySpec[] = [
  CUSTOMERS,
  {
    code: 'orders',
    table: 'demo_orders',
    tenantColumn: 'ord_tenant_id',
    idColumn: 'ord_id',
    change: { amount: 1 },
    create: (victimId) => ({ customer_id: victimId, amount: 5 }),
  },
  {
    code: 'users',
    table: 'app_users',
    tenantColumn: 'usr_tenant_id',
    idColumn: 'usr_id',
    change: { first_name: 'Hijacked' },
    create: () => ({ email_id: 'intruder@evil.example', password: 'Intruder-Passw0rd', usr_tenant_id: 1 }),
  },
  // The same table in a database of another dialect, reached through app_connections (D3).
  { ...CUSTOMERS, code: 'remote_customers', connection: 'erp' },
  {
    code: 'roles',
    table: 'app_roles',
    tenantColumn: 'rol_tenant_id',
    idColumn: 'rol_id',
    change: { description: 'Hijacked' },
    create: () => ({ code: 'EVIL', permissions: ['*:*'] }),
  },
];

interface Attacker {
  name: string;
  tenant: string;
  email: string;
  victim: string;
}

/** A tenant admin of globex against acme, and acme's system admin against globex. */
const ATTACKERS: Attacker[] = [
  { name: 'globex ADMIN', tenant: TENANT.globex, email: 'admin@globex.test', victim: TENANT.acme },
  { name: 'acme SYSTEM_ADMIN', tenant: TENANT.acme, email: 'root@acme.test', victim: TENANT.globex },
];

const SAMPLE = 4;

async function snapshot(ds: DataSource, e: EntitySpec, tenant: string): Promise<string> {
  const rows = await ds
    .createQueryBuilder()
    .select('t.*')
    .from(e.table, 't')
    .where(`t.${e.tenantColumn} = :tenant`, { tenant: Number(tenant) })
    .orderBy(`t.${e.idColumn}`)
    .getRawMany();
  return JSON.stringify(rows);
}

describe('Tenant isolation matrix (generated)', () => {
  let t: TestApp;
  let ds: DataSource;
  let external: TestDatabase;
  let configDb: TestDatabase;
  let routes: RouteInfo[];
  let attempts = 0;
  /** The database an entity's rows live in. */
  const dsOf = (e: EntitySpec): DataSource =>
    e.connection ? t.app.get(ConnectionsService).dataSourceFor(e.connection, TENANT.acme) : ds;

  beforeAll(async () => {
    external = await externalTestDatabase('isolation_ext');
    configDb = await configDbWith('isolation_cfg', [
      { code: 'erp', url: connectionUrlOf(external), type: connectionTypeOf(external) },
    ]);
    t = await startTestApp({
      label: 'isolation',
      env: { DB_NAME: configDb.env.DB_NAME, CONNECTION_ENCRYPTION_KEY: CONNECTION_TEST_KEY },
    });
    ds = t.app.get(DatabaseService).dataSource;
    const names = ['Ada', 'Alan', 'Barbara', 'Edsger', 'Grace', 'Frances'];
    await seedExternalCustomers(dsOf(ENTITIES.find((e) => e.connection)!), [
      ...names.map((n) => [1, `Acme ${n}`] as const),
      ...names.map((n) => [2, `Globex ${n}`] as const),
    ]);
    await remoteCustomersEntity(ds, 'remote_customers', 'erp');
    routes = listRoutes(t.app).filter(
      (r) =>
        r.controller === 'EntityController' ||
        r.controller === 'EntityWriteController' ||
        r.controller === 'EntityHistoryController',
    );
  });

  afterAll(async () => {
    process.stdout.write(
      `isolation matrix: ${attempts} attempts over ${routes.length} routes × ${ENTITIES.length} entities × ${ATTACKERS.length} attackers\n`,
    );
    await t?.close();
    await configDb?.drop();
    await external?.drop();
  });

  it('should know an attack for every entity route', () => {
    const known = new Set([
      'GET /api/v1/{entity_code}',
      'GET /api/v1/{entity_code}/{id}',
      'POST /api/v1/{entity_code}',
      'POST /api/v1/{entity_code}/bulk',
      'PUT /api/v1/{entity_code}/{id}',
      'DELETE /api/v1/{entity_code}/{id}',
      'GET /api/v1/records',
      'GET /api/entity/{entity_code}/get',
      'GET /api/v1/{entity_code}/{id}/history',
      'GET /api/v1/{entity_code}/{id}/history/{version}',
      'POST /api/v1/{entity_code}/{id}/restore',
    ]);
    expect(routes.map((r) => `${r.method} ${r.path}`).filter((r) => !known.has(r))).toEqual([]);
    expect(routes.length).toBe(known.size);
  });

  for (const attacker of ATTACKERS) {
    for (const entity of ENTITIES) {
      it(`should keep ${entity.code} of tenant ${attacker.victim} out of reach of ${attacker.name}`, async () => {
        const token = (await signin(t.app, attacker.tenant, attacker.email)).token;
        const headers = authHeaders(attacker.tenant, token);
        const victimToken = (
          await signin(
            t.app,
            attacker.victim,
            attacker.victim === TENANT.acme ? 'admin@acme.test' : 'admin@globex.test',
          )
        ).token;
        const before = await snapshot(dsOf(entity), entity, attacker.victim);
        const victimIds = (JSON.parse(before) as Array<Record<string, unknown>>).map((r) =>
          Number(r[entity.idColumn]),
        );
        expect(victimIds.length).toBeGreaterThan(0);
        const sample = victimIds.slice(0, SAMPLE);
        const fail = (what: string, status: number) => {
          attempts++;
          expect({ what, refused: [400, 403, 404, 409].includes(status) }).toEqual({ what, refused: true });
        };
        const noVictimRows = (what: string, records: Array<{ id?: number }>) => {
          attempts++;
          expect({
            what,
            leaked: records.filter((r) => r.id !== undefined && victimIds.includes(Number(r.id))),
          }).toEqual({ what, leaked: [] });
        };
        const inject = (method: string, url: string, payload?: object) =>
          t.app.inject({ method: method as 'GET', url, headers, payload });

        for (const route of routes) {
          const key = `${route.method} ${route.path}`;
          const base = route.path.replace('{entity_code}', entity.code);
          switch (key) {
            case 'GET /api/v1/{entity_code}': {
              // Plain, by id filter, by every field's sort, deep pages, and through the victim's cached page.
              const urls = [base + '?limit=500', `${base}?filters[id]=${sample[0]}`];
              const fields = Object.keys(
                (await inject('GET', `${base}?limit=1`)).json().data?.records?.[0] ?? {},
              );
              for (const f of fields) urls.push(`${base}?limit=500&sortBy=${f}&sortOrder=desc`);
              urls.push(`${base}?limit=50&skip=0`);
              await t.app.inject({
                method: 'GET',
                url: `${base}?limit=50&skip=0`,
                headers: authHeaders(attacker.victim, victimToken),
              });
              for (const url of urls) {
                const res = await inject('GET', url);
                if (res.statusCode !== 200) fail(`GET ${url}`, res.statusCode);
                else noVictimRows(`GET ${url}`, res.json().data.records);
              }
              break;
            }
            case 'GET /api/v1/records': {
              const res = await inject('GET', `/api/v1/records?entity=${entity.code}&limit=500`);
              if (res.statusCode !== 200) fail('records', res.statusCode);
              else noVictimRows('records', res.json().data);
              break;
            }
            case 'GET /api/entity/{entity_code}/get': {
              fail('style 1 ten_id', (await inject('GET', `${base}?ten_id=${attacker.victim}`)).statusCode);
              const own = await inject('GET', base);
              if (own.statusCode === 200) noVictimRows('style 1', own.json().data);
              break;
            }
            case 'GET /api/v1/{entity_code}/{id}':
              for (const id of sample)
                fail(`GET ${id}`, (await inject('GET', base.replace('{id}', String(id)))).statusCode);
              break;
            case 'PUT /api/v1/{entity_code}/{id}':
              for (const id of sample) {
                const url = base.replace('{id}', String(id));
                fail(
                  `PUT ${id}`,
                  (await inject('PUT', url, { ...entity.change, lastModified: new Date().toISOString() }))
                    .statusCode,
                );
                fail(
                  `PUT ${id} tenant`,
                  (
                    await inject('PUT', url, {
                      tenant_id: attacker.tenant,
                      lastModified: new Date().toISOString(),
                    })
                  ).statusCode,
                );
              }
              break;
            case 'DELETE /api/v1/{entity_code}/{id}':
              for (const id of sample) {
                fail(`DELETE ${id}`, (await inject('DELETE', base.replace('{id}', String(id)))).statusCode);
                fail(
                  `DELETE ${id} cascade`,
                  (await inject('DELETE', `${base.replace('{id}', String(id))}?cascade=true`)).statusCode,
                );
              }
              break;
            case 'POST /api/v1/{entity_code}': {
              // The victim's customer as a reference, the victim's tenant in the body.
              const victimCustomer = Number(
                (
                  await ds.query(
                    `SELECT MIN(cus_id) AS id FROM demo_customers WHERE cus_tenant_id = ${Number(attacker.victim)}`,
                  )
                )[0].id,
              );
              fail('POST', (await inject('POST', base, entity.create(victimCustomer))).statusCode);
              break;
            }
            case 'GET /api/v1/{entity_code}/{id}/history':
              for (const id of sample)
                fail(`history ${id}`, (await inject('GET', base.replace('{id}', String(id)))).statusCode);
              break;
            case 'GET /api/v1/{entity_code}/{id}/history/{version}':
              for (const id of sample)
                for (const version of ['1', '2'])
                  fail(
                    `history ${id} v${version}`,
                    (await inject('GET', base.replace('{id}', String(id)).replace('{version}', version)))
                      .statusCode,
                  );
              break;
            case 'POST /api/v1/{entity_code}/{id}/restore':
              for (const id of sample) {
                const url = base.replace('{id}', String(id));
                fail(
                  `restore ${id}`,
                  (await inject('POST', url, { version: 1, lastModified: new Date().toISOString() }))
                    .statusCode,
                );
                fail(`undelete ${id}`, (await inject('POST', url, { undelete: true })).statusCode);
              }
              break;
            case 'POST /api/v1/{entity_code}/bulk': {
              // D51: the request refused as a whole, or every row refused as its single route would.
              const refusedRows = async (what: string, payload: object) => {
                const res = await inject('POST', base, payload);
                if (res.statusCode !== 200) return fail(what, res.statusCode);
                for (const row of res.json().data.results as Array<{ index: number; status: number }>)
                  fail(`${what} row ${row.index}`, row.status);
              };
              const token = new Date().toISOString();
              await refusedRows('bulk update', {
                operation: 'update',
                records: sample.map((id) => ({ id, ...entity.change, lastModified: token })),
              });
              await refusedRows('bulk update tenant', {
                operation: 'update',
                records: sample.map((id) => ({ id, tenant_id: attacker.tenant, lastModified: token })),
              });
              await refusedRows('bulk delete cascade', { operation: 'delete', ids: sample, cascade: true });
              await refusedRows('bulk delete all-or-none', {
                operation: 'delete',
                ids: sample,
                allOrNone: true,
              });
              const victimCustomer = Number(
                (
                  await ds.query(
                    `SELECT MIN(cus_id) AS id FROM demo_customers WHERE cus_tenant_id = ${Number(attacker.victim)}`,
                  )
                )[0].id,
              );
              await refusedRows('bulk create', {
                operation: 'create',
                records: [entity.create(victimCustomer)],
              });
              break;
            }
            default:
              throw new Error(`No attack defined for ${key}`);
          }
        }
        expect(await snapshot(dsOf(entity), entity, attacker.victim)).toBe(before);
      });
    }
  }
});
