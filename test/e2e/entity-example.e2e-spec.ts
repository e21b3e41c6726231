import type { DataSource } from 'typeorm';
import { DatabaseService } from '../../src/database/database.service';
import { authHeaders, signin, TENANT } from '../support/auth';
import type { TestDialect } from '../support/test-database';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * The worked example of docs/entity-example.md, run for real: a new business table is created,
 * a few rows are inserted for two tenants, and one registry row plus one profile row make it an
 * entity of the generic API. No code of the service changes and the service is not restarted:
 * `GET /api/v1/crm_contacts` works as soon as the rows exist.
 *
 * The registry caches a "no such entity" answer for 60 s, so every row is inserted before the
 * first request that names `crm_contacts`.
 */

/** CREATE TABLE per dialect, the same column conventions (spec §2.1 + D4) on each. */
const CREATE_TABLE: Record<TestDialect, string> = {
  postgres: `
    CREATE TABLE crm_contacts (
      ctc_id            SERIAL PRIMARY KEY,
      ctc_tenant_id     INTEGER NOT NULL,
      ctc_full_name     VARCHAR(100) NOT NULL,
      ctc_phone         VARCHAR(50),
      ctc_notes         TEXT,
      ctc_status        INTEGER NOT NULL DEFAULT 1,
      ctc_is_deleted    BOOLEAN NOT NULL DEFAULT FALSE,
      ctc_audit_data    TEXT,
      ctc_add_dtls      TEXT,
      ctc_last_modified TIMESTAMP(3),
      CONSTRAINT fk_crm_contacts_tenant FOREIGN KEY (ctc_tenant_id) REFERENCES app_tenants (tnt_id)
    )`,
  mariadb: `
    CREATE TABLE crm_contacts (
      ctc_id            INT AUTO_INCREMENT PRIMARY KEY,
      ctc_tenant_id     INT NOT NULL,
      ctc_full_name     VARCHAR(100) NOT NULL,
      ctc_phone         VARCHAR(50),
      ctc_notes         LONGTEXT,
      ctc_status        INT NOT NULL DEFAULT 1,
      ctc_is_deleted    TINYINT(1) NOT NULL DEFAULT 0,
      ctc_audit_data    LONGTEXT,
      ctc_add_dtls      LONGTEXT,
      ctc_last_modified DATETIME(3),
      CONSTRAINT fk_crm_contacts_tenant FOREIGN KEY (ctc_tenant_id) REFERENCES app_tenants (tnt_id)
    )`,
  sqlite: `
    CREATE TABLE crm_contacts (
      ctc_id            INTEGER PRIMARY KEY AUTOINCREMENT,
      ctc_tenant_id     INTEGER NOT NULL,
      ctc_full_name     VARCHAR(100) NOT NULL,
      ctc_phone         VARCHAR(50),
      ctc_notes         TEXT,
      ctc_status        INTEGER NOT NULL DEFAULT 1,
      ctc_is_deleted    BOOLEAN NOT NULL DEFAULT 0,
      ctc_audit_data    TEXT,
      ctc_add_dtls      TEXT,
      ctc_last_modified DATETIME,
      CONSTRAINT fk_crm_contacts_tenant FOREIGN KEY (ctc_tenant_id) REFERENCES app_tenants (tnt_id)
    )`,
};
const CREATE_INDEX = 'CREATE INDEX idx_crm_contacts_tenant ON crm_contacts (ctc_tenant_id, ctc_full_name)';

/** obj_payload: the fields ({name, column, type, rules}) and relations of the registry format. */
const PAYLOAD = {
  fields: [
    { name: 'id', column: 'ctc_id', type: 'integer', readOnly: true },
    { name: 'full_name', column: 'ctc_full_name', type: 'text', required: true, maxLength: 100 },
    { name: 'phone', column: 'ctc_phone', type: 'text', maxLength: 50 },
    { name: 'notes', column: 'ctc_notes', type: 'text' },
  ],
  relations: [],
};

/** prf_policy: own tenant's rows only, notes never returned, phone partly masked. */
const POLICY = {
  tenantPolicy: { mode: 'STRICT' },
  projection: { type: 'exclude', excludeFields: ['notes'] },
  masking: { phone: 'partial' },
  queryPolicy: { maxPageSize: 50, defaultPageSize: 20, allowAdhocFilters: true },
  permissions: { read: true, write: true, delete: true, export: true, approve: true },
};

const lit = (value: string): string => `'${value.replace(/'/g, "''")}'`;
const LAST_MODIFIED = lit('2025-01-15 09:30:00.000');

const REGISTRY_INSERT = `
  INSERT INTO app_object_registries (
    obj_tenant_id, obj_code, obj_description, obj_type_code, obj_connection_code, obj_payload,
    obj_payload_object_name, obj_payload_identifier, obj_payload_column_prefix, obj_payload_table,
    obj_name, obj_db_key, obj_db_type, obj_connection_id,
    obj_status, obj_is_deleted, obj_audit_data, obj_add_dtls, obj_last_modified
  ) VALUES (
    NULL, 'crm_contacts', 'CRM contacts', 'TABLE', 'default', ${lit(JSON.stringify(PAYLOAD))},
    'crm_contacts', 'ctc_id', 'ctc_', 'crm_contacts',
    'CRM contacts', 'ctc_id', NULL, NULL,
    1, FALSE, NULL, ${lit(JSON.stringify({ maintainedBy: 'tenant' }))}, ${LAST_MODIFIED}
  )`;

const PROFILE_INSERT = `
  INSERT INTO app_object_profiles (
    prf_tenant_id, prf_code, prf_description, prf_object_code, prf_mode_code, prf_policy,
    prf_status, prf_is_deleted, prf_audit_data, prf_add_dtls, prf_last_modified
  ) VALUES (
    NULL, 'crm_contacts', 'CRM contacts: notes hidden, phone partly masked', 'crm_contacts', 'FULL',
    ${lit(JSON.stringify(POLICY))},
    1, FALSE, NULL, NULL, ${LAST_MODIFIED}
  )`;

interface Contact {
  tenant: number;
  name: string;
  phone: string | null;
  notes: string;
  deleted?: boolean;
}
const CONTACTS: Contact[] = [
  { tenant: 1, name: 'Ada Lovelace', phone: '+44 20 7946 0001', notes: 'acme secret 1' },
  { tenant: 1, name: 'Alan Turing', phone: '+44 20 7946 0002', notes: 'acme secret 2' },
  { tenant: 1, name: "Grace O'Hopper", phone: null, notes: 'acme secret 3' },
  { tenant: 1, name: 'Deleted Person', phone: '+1 555 0100', notes: 'gone', deleted: true },
  { tenant: 2, name: 'Edsger Dijkstra', phone: '+31 20 555 0003', notes: 'globex secret 1' },
  { tenant: 2, name: 'Barbara Liskov', phone: '+1 617 555 0004', notes: 'globex secret 2' },
];

const contactInsert = (c: Contact): string => `
  INSERT INTO crm_contacts (
    ctc_tenant_id, ctc_full_name, ctc_phone, ctc_notes,
    ctc_status, ctc_is_deleted, ctc_audit_data, ctc_add_dtls, ctc_last_modified
  ) VALUES (
    ${c.tenant}, ${lit(c.name)}, ${c.phone === null ? 'NULL' : lit(c.phone)}, ${lit(c.notes)},
    1, ${c.deleted ? 'TRUE' : 'FALSE'}, ${lit('{"created_by":"example"}')}, NULL, ${LAST_MODIFIED}
  )`;

describe('A new entity from registry and profile rows only (docs/entity-example.md)', () => {
  let t: TestApp;
  let ds: DataSource;
  const token: Record<string, string> = {};
  const idsOf: Record<number, number[]> = {};

  beforeAll(async () => {
    t = await startTestApp({ label: 'entity-example' });
    ds = t.app.get(DatabaseService).dataSource;
    // 1. The business table (DDL run by hand, not by a migration of the service).
    await ds.query(CREATE_TABLE[t.db.dialect]);
    await ds.query(CREATE_INDEX);
    // 2. Its rows, for two tenants.
    for (const c of CONTACTS) await ds.query(contactInsert(c));
    // 3. One registry row and one profile row (system-wide: tenant NULL).
    await ds.query(REGISTRY_INSERT);
    await ds.query(PROFILE_INSERT);

    for (const tenant of [1, 2]) {
      const rows = await ds.query<Array<{ id: number }>>(
        `SELECT ctc_id AS id FROM crm_contacts WHERE ctc_tenant_id = ${tenant} ORDER BY ctc_id`,
      );
      idsOf[tenant] = rows.map((r) => Number(r.id));
    }
    token.acmeAdmin = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    token.globexAdmin = (await signin(t.app, TENANT.globex, 'admin@globex.test')).token;
  });

  afterAll(async () => {
    await t?.close();
  });

  const get = (url: string, tenant: string, who: string) =>
    t.app.inject({ method: 'GET', url, headers: authHeaders(tenant, token[who]) });

  /** Record keys other than the ones the service may add to every record. */
  const fieldKeys = (record: object) =>
    Object.keys(record)
      .filter((k) => k !== 'lastModified')
      .sort();

  it('should list only acme’s live contacts to the acme admin, notes hidden and phones masked', async () => {
    const res = await get('/api/v1/crm_contacts?sortBy=full_name', TENANT.acme, 'acmeAdmin');
    expect(res.statusCode).toBe(200);
    const data = res.json().data;
    expect(data).toMatchObject({ total: 3, limit: 20, skip: 0, meta: { entityCode: 'crm_contacts' } });
    expect(data.records.map((r: { full_name: string }) => r.full_name)).toEqual([
      'Ada Lovelace',
      'Alan Turing',
      "Grace O'Hopper",
    ]);
    for (const r of data.records) expect(fieldKeys(r)).toEqual(['full_name', 'id', 'phone']);
    expect(data.records.map((r: { phone: string | null }) => r.phone)).toEqual([
      '************0001',
      '************0002',
      null,
    ]);
    expect(JSON.stringify(data)).not.toMatch(/secret|Deleted Person|7946/);
  });

  it('should list only globex’s contacts to the globex admin', async () => {
    const res = await get('/api/v1/crm_contacts', TENANT.globex, 'globexAdmin');
    expect(res.statusCode).toBe(200);
    const data = res.json().data;
    expect(data.total).toBe(2);
    expect(data.records.map((r: { id: number }) => r.id)).toEqual(idsOf[2]);
    expect(data.records.map((r: { full_name: string }) => r.full_name).sort()).toEqual([
      'Barbara Liskov',
      'Edsger Dijkstra',
    ]);
    for (const r of data.records) expect(fieldKeys(r)).toEqual(['full_name', 'id', 'phone']);
  });

  it('should read one record by id in its own tenant only', async () => {
    const [acmeId] = idsOf[1];
    const own = await get(`/api/v1/crm_contacts/${acmeId}`, TENANT.acme, 'acmeAdmin');
    expect(own.statusCode).toBe(200);
    expect(own.json().data).toMatchObject({
      id: acmeId,
      full_name: 'Ada Lovelace',
      phone: '************0001',
    });
    expect(own.json().data).not.toHaveProperty('notes');
    const other = await get(`/api/v1/crm_contacts/${acmeId}`, TENANT.globex, 'globexAdmin');
    expect(other.statusCode).toBe(404);
    // The soft-deleted row is not found either.
    const deleted = await get(`/api/v1/crm_contacts/${idsOf[1][3]}`, TENANT.acme, 'acmeAdmin');
    expect(deleted.statusCode).toBe(404);
  });

  it('should filter on a visible field, with SQL in the value treated as data', async () => {
    const res = await get('/api/v1/crm_contacts?filters[full_name]=Alan%20Turing', TENANT.acme, 'acmeAdmin');
    expect(res.json().data.records.map((r: { id: number }) => r.id)).toEqual([idsOf[1][1]]);
    const quoted = await get(
      `/api/v1/crm_contacts?filters[full_name]=${encodeURIComponent("Grace O'Hopper")}`,
      TENANT.acme,
      'acmeAdmin',
    );
    expect(quoted.json().data.total).toBe(1);
    const injection = await get(
      `/api/v1/crm_contacts?filters[full_name]=${encodeURIComponent("x' OR '1'='1")}`,
      TENANT.acme,
      'acmeAdmin',
    );
    expect({ status: injection.statusCode, total: injection.json().data.total }).toEqual({
      status: 200,
      total: 0,
    });
    // Another tenant's value finds nothing.
    const cross = await get(
      '/api/v1/crm_contacts?filters[full_name]=Alan%20Turing',
      TENANT.globex,
      'globexAdmin',
    );
    expect(cross.json().data.total).toBe(0);
  });

  it.each([
    ['an unknown field', 'filters[email]=x'],
    ['a column name instead of a field name', 'filters[ctc_tenant_id]=2'],
    ['the hidden field', 'filters[notes]=acme%20secret%201'],
    ['the masked field', 'filters[phone]=1'],
    ['a sort on the hidden field', 'sortBy=notes'],
    ['a page above the profile’s maxPageSize', 'limit=51'],
  ])('should refuse %s with 400 VALIDATION_ERROR', async (_, query) => {
    const res = await get(`/api/v1/crm_contacts?${query}`, TENANT.acme, 'acmeAdmin');
    expect({ status: res.statusCode, code: res.json().error?.code }).toEqual({
      status: 400,
      code: 'VALIDATION_ERROR',
    });
  });
});
