import type { DataSource } from 'typeorm';
import { ConnectionsService } from '../../src/database/connections/connections.service';
import { authHeaders, signin, TENANT } from '../support/auth';
import {
  CONNECTION_TEST_KEY as KEY,
  configDbWith,
  connectionTypeOf,
  connectionUrlOf,
  externalTestDatabase,
  remoteCustomersEntity,
  seedExternalCustomers,
} from '../support/connections';
import { copyEntityConfig } from '../support/entity-fixtures';
import { startTestApp, TestApp } from '../support/test-app';
import type { TestDatabase } from '../support/test-database';

/**
 * D3 through the whole application: StartupService opens app_connections after migrations and
 * seed, and sets externalDbs only when every active connection is open.
 */
async function startOn(label: string, db: TestDatabase, env: Record<string, string> = {}): Promise<TestApp> {
  return startTestApp({
    label,
    env: { DB_NAME: db.env.DB_NAME, CONNECTION_ENCRYPTION_KEY: KEY, ...env },
  });
}

describe('External connections at start-up (D3)', () => {
  describe('when every connection opens', () => {
    let external: TestDatabase;
    let configDb: TestDatabase;
    let t: TestApp;

    beforeAll(async () => {
      external = await externalTestDatabase('conn_e2e_ext');
      configDb = await configDbWith('conn_e2e_ok', [
        { code: 'erp', url: connectionUrlOf(external), type: connectionTypeOf(external) },
      ]);
      t = await startOn('conn_e2e_ok_app', configDb);
    });

    afterAll(async () => {
      await t?.close();
      await configDb?.drop();
      await external?.drop();
    });

    it('should be ready with externalDbs set and serve the pool through dataSourceFor', async () => {
      const res = await t.app.inject({ method: 'GET', url: '/readyz' });
      expect(res.statusCode).toBe(200);
      expect(res.json().info.externalDbs.status).toBe('up');
      const connections = t.app.get(ConnectionsService);
      expect(connections.status()).toEqual([expect.objectContaining({ code: 'erp', state: 'open' })]);
      // The external database is a migrated one of its own: its tenant table is empty, while the
      // configuration database got the demo seed.
      const ext = await connections.dataSourceFor('erp', '1').query('SELECT COUNT(*) AS n FROM app_tenants');
      const cfg = await connections.dataSourceFor(null, '1').query('SELECT COUNT(*) AS n FROM app_tenants');
      expect(Number(ext[0].n)).toBe(0);
      expect(Number(cfg[0].n)).toBeGreaterThan(0);
    });
    it('should serve an entity whose registry row names the connection from the other database', async () => {
      const connections = t.app.get(ConnectionsService);
      const ext = connections.dataSourceFor('erp', '1');
      const cfg = connections.dataSourceFor(null, '1');
      // Customer rows only in the external database, tenants 1 and 2.
      await seedExternalCustomers(ext, [
        [1, 'Remote Ada'],
        [1, 'Remote Alan'],
        [2, 'Remote Grace'],
      ]);
      // Registry and profile rows in the configuration database: a copy of `customers` on connection erp.
      await copyEntityConfig(cfg, 'customers', 'remote_customers', {
        registry: { obj_connection_code: 'erp' },
      });

      const read = async (tenant: string, email: string) => {
        const token = (await signin(t.app, tenant, email)).token;
        return t.app.inject({
          method: 'GET',
          url: '/api/v1/remote_customers?sortBy=name',
          headers: authHeaders(tenant, token),
        });
      };
      const acme = await read(TENANT.acme, 'admin@acme.test');
      expect(acme.statusCode).toBe(200);
      expect(acme.json().data.records.map((r: { name: string }) => r.name)).toEqual([
        'Remote Ada',
        'Remote Alan',
      ]);
      const globex = await read(TENANT.globex, 'admin@globex.test');
      expect(globex.json().data.records.map((r: { name: string }) => r.name)).toEqual(['Remote Grace']);

      // customers' relation to orders (D25) now points at another database: a delete, which would
      // have to soft-delete dependents in the same transaction, is refused rather than half done.
      const token = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
      const [ada] = acme.json().data.records as Array<{ id: number }>;
      const del = await t.app.inject({
        method: 'DELETE',
        url: `/api/v1/remote_customers/${ada.id}`,
        headers: authHeaders(TENANT.acme, token),
      });
      expect(del.statusCode).toBe(501);
      expect(del.json().error.code).toBe('NOT_IMPLEMENTED');
      const [row] = await ext.query(
        `SELECT cus_is_deleted AS d FROM demo_customers WHERE cus_id = ${ada.id}`,
      );
      expect(Number((row as { d: unknown }).d)).toBe(0);
    });

    describe('writes to an entity on the other database', () => {
      let ext: DataSource;
      let cfg: DataSource;
      let acme: Record<string, string>;
      let globex: Record<string, string>;
      const url = '/api/v1/remote_people';

      const extRow = async (id: number) =>
        (
          await ext
            .createQueryBuilder()
            .select('c.*')
            .from('demo_customers', 'c')
            .where('c.cus_id = :id', { id })
            .getRawMany<Record<string, unknown>>()
        )[0];
      const auditRows = (ds: DataSource, id: number) =>
        ds
          .createQueryBuilder()
          .select('a.aud_event', 'event')
          .addSelect('a.aud_tenant_id', 'tenant')
          .from('app_audit_logs', 'a')
          .where('a.aud_entity_code = :code AND a.aud_record_id = :id', {
            code: 'remote_people',
            id: String(id),
          })
          .orderBy('a.aud_id', 'ASC')
          .getRawMany<{ event: string; tenant: unknown }>();
      const countExt = async () => Number((await ext.query('SELECT COUNT(*) AS n FROM demo_customers'))[0].n);

      beforeAll(async () => {
        const connections = t.app.get(ConnectionsService);
        ext = connections.dataSourceFor('erp', '1');
        cfg = connections.dataSourceFor(null, '1');
        await remoteCustomersEntity(cfg, 'remote_people', 'erp');
        acme = authHeaders(TENANT.acme, (await signin(t.app, TENANT.acme, 'admin@acme.test')).token);
        globex = authHeaders(TENANT.globex, (await signin(t.app, TENANT.globex, 'admin@globex.test')).token);
      });

      it('should create, update and delete the row in the other database, auditing in the configuration database', async () => {
        const created = await t.app.inject({
          method: 'POST',
          url,
          headers: acme,
          payload: { name: 'Remote Edsger', email: 'Edsger@Remote.example', tier: 'gold' },
        });
        expect(created.statusCode).toBe(201);
        const { id, lastModified } = created.json().data as { id: number; lastModified: string };
        expect(await extRow(id)).toMatchObject({
          cus_name: 'Remote Edsger',
          cus_email: 'edsger@remote.example',
        });
        expect(Number((await extRow(id)).cus_tenant_id)).toBe(1);

        const updated = await t.app.inject({
          method: 'PUT',
          url: `${url}/${id}`,
          headers: acme,
          payload: { phone: '+44 1', lastModified },
        });
        expect(updated.statusCode).toBe(200);
        expect((await extRow(id)).cus_phone).toBe('+44 1');
        const stale = await t.app.inject({
          method: 'PUT',
          url: `${url}/${id}`,
          headers: acme,
          payload: { phone: '+44 2', lastModified },
        });
        expect(stale.statusCode).toBe(409);

        const deleted = await t.app.inject({ method: 'DELETE', url: `${url}/${id}`, headers: acme });
        expect(deleted.statusCode).toBe(200);
        expect(Number((await extRow(id)).cus_is_deleted)).toBe(1);

        expect((await auditRows(cfg, id)).map((r) => [r.event, Number(r.tenant)])).toEqual([
          ['entity.created', 1],
          ['entity.updated', 1],
          ['entity.deleted', 1],
        ]);
        expect(await auditRows(ext, id)).toEqual([]);
        // D54: the events are in the configuration database's outbox, beside the audit rows.
        const events = await cfg.query<Array<{ type: unknown }>>(
          `SELECT evt_type AS type FROM app_events WHERE evt_entity_code = 'remote_people' AND evt_record_id = ${id} ORDER BY evt_sequence`,
        );
        expect(events.map((e) => String(e.type))).toEqual([
          'remote_people.created',
          'remote_people.updated',
          'remote_people.deleted',
        ]);
      });

      it('should write a bulk request across both databases: a savepoint per row on each (D51)', async () => {
        const before = await countExt();
        const bulk = (payload: unknown) =>
          t.app.inject({ method: 'POST', url: `${url}/bulk`, headers: acme, payload: payload as object });
        const res = await bulk({
          operation: 'create',
          records: [
            { name: 'Bulk Remote 1', email: 'bulk-remote-1@remote.example' },
            { name: 'Bulk Remote 2', email: 'bulk-remote-2@remote.example', tier: 'no-such-tier' },
            { name: 'Bulk Remote 3', email: 'bulk-remote-3@remote.example' },
          ],
        });
        expect(res.statusCode).toBe(200);
        const results = res.json().data.results as Array<{ id: number | null; status: number }>;
        expect(results.map((r) => r.status)).toEqual([201, 400, 201]);
        expect(await countExt()).toBe(before + 2);
        for (const r of [results[0], results[2]]) {
          expect((await extRow(r.id!)).cus_name).toMatch(/^Bulk Remote/);
          expect((await auditRows(cfg, r.id!)).map((a) => a.event)).toEqual(['entity.created']);
        }
        // All or none: the failing row undoes the other's row in the other database and its audit row.
        const audits = Number((await cfg.query('SELECT COUNT(*) AS n FROM app_audit_logs'))[0].n);
        const none = await bulk({
          operation: 'create',
          allOrNone: true,
          records: [
            { name: 'Bulk Remote 4', email: 'bulk-remote-4@remote.example' },
            { name: 'Bulk Remote 5', email: 'bulk-remote-1@remote.example' },
          ],
        });
        expect(none.statusCode).toBe(400);
        expect(await countExt()).toBe(before + 2);
        expect(Number((await cfg.query('SELECT COUNT(*) AS n FROM app_audit_logs'))[0].n)).toBe(audits);
      });

      it('should check uniqueness in the other database and value sets in the configuration database', async () => {
        const first = await t.app.inject({
          method: 'POST',
          url,
          headers: acme,
          payload: { name: 'Remote Barbara', email: 'barbara@remote.example' },
        });
        expect(first.statusCode).toBe(201);
        const before = await countExt();
        const again = await t.app.inject({
          method: 'POST',
          url,
          headers: acme,
          payload: { name: 'Remote Barbara 2', email: 'BARBARA@remote.example', tier: 'no-such-tier' },
        });
        expect(again.statusCode).toBe(400);
        expect(
          again
            .json()
            .error.details.map((d: { field: string }) => d.field)
            .sort(),
        ).toEqual(['email', 'tier']);
        expect(await countExt()).toBe(before);
      });

      it('should keep other tenants out of the rows in the other database', async () => {
        const created = await t.app.inject({
          method: 'POST',
          url,
          headers: acme,
          payload: { name: 'Remote Frances', email: 'frances@remote.example' },
        });
        const { id, lastModified } = created.json().data as { id: number; lastModified: string };
        const before = await extRow(id);
        const put = await t.app.inject({
          method: 'PUT',
          url: `${url}/${id}`,
          headers: globex,
          payload: { name: 'Stolen', lastModified },
        });
        const del = await t.app.inject({ method: 'DELETE', url: `${url}/${id}`, headers: globex });
        const get = await t.app.inject({ method: 'GET', url: `${url}/${id}`, headers: globex });
        expect([put.statusCode, del.statusCode, get.statusCode]).toEqual([404, 404, 404]);
        expect(await extRow(id)).toEqual(before);
      });

      it('should leave the other database unchanged when the audit row cannot be written', async () => {
        const before = await countExt();
        await cfg.query('ALTER TABLE app_audit_logs RENAME TO app_audit_logs_away');
        try {
          const res = await t.app.inject({
            method: 'POST',
            url,
            headers: acme,
            payload: { name: 'Remote Lost', email: 'lost@remote.example' },
          });
          expect(res.statusCode).toBe(500);
          expect(res.json().error.code).toBe('SERVICE_ERROR');
          expect(JSON.stringify(res.json())).not.toMatch(/app_audit_logs/);
        } finally {
          await cfg.query('ALTER TABLE app_audit_logs_away RENAME TO app_audit_logs');
        }
        expect(await countExt()).toBe(before);
      });
    });
  });

  describe('when a connection gives up', () => {
    let configDb: TestDatabase;
    let t: TestApp;

    beforeAll(async () => {
      configDb = await configDbWith('conn_e2e_down', [
        { code: 'down', url: 'postgres://postgres:x@127.0.0.1:1/nothing', type: 'postgresql' },
      ]);
      t = await startOn('conn_e2e_down_app', configDb, { SQL_CONNECT_MAX_ATTEMPTS: '1' });
    });

    afterAll(async () => {
      await t?.close();
      await configDb?.drop();
    });

    it('should stay not ready with externalDbs down and say why on /healthz', async () => {
      const ready = await t.app.inject({ method: 'GET', url: '/readyz' });
      expect(ready.statusCode).toBe(503);
      expect(ready.json().error.externalDbs.status).toBe('down');
      expect(ready.json().info.cache.status).toBe('up');
      const health = (await t.app.inject({ method: 'GET', url: '/healthz' })).json();
      expect(health.info.process.ready).toBe(false);
      expect(health.info.process.startupFailure).toMatch(/^external connection\(s\) not opened: down \(/);
      expect((await t.app.inject({ method: 'GET', url: '/api/v1/anything' })).statusCode).toBe(503);
    });
  });
});
