import { DataSource, EntityManager } from 'typeorm';
import { hashPassword } from '../../common/crypto/password';
import {
  DEMO_DATAVIEWS,
  DEMO_ENTITIES,
  DEMO_NAVIGATIONS,
  DEMO_PAGES,
  DEMO_PROFILES,
  DEMO_ROLES,
  DEMO_ROW_COUNTS,
  DEMO_TENANTS,
  DEMO_USERS,
  DEMO_VALUE_SETS,
  DEMO_WORKFLOWS,
  demoCustomers,
  demoOrders,
} from './demo-data';
import { seedCreatedEntries } from './demo-history';

export interface SeedDemoOptions {
  /** Password of every demo user (DEMO_PASSWORD or the development default). */
  password: string;
  log?: (msg: string) => void;
}

export interface SeedDemoResult {
  /** Rows inserted per table; 0 everywhere on a database that is already seeded. */
  inserted: Record<string, number>;
}

type SqlValue = string | number | null;
type Row = Record<string, SqlValue>;

/**
 * Booleans go in as 1/0: better-sqlite3 cannot bind JS booleans, and 1/0 is accepted by BOOLEAN
 * (PostgreSQL casts the untyped parameter '1'), TINYINT(1) and BIT alike.
 */
const bit = (value: boolean): number => (value ? 1 : 0);
const json = (value: unknown): string | null =>
  value === null || value === undefined ? null : JSON.stringify(value);

/** Rows per INSERT: 100 rows × 12 columns (customers, the widest bulk table) stays below SQL Server's 2100 parameters. */
const CHUNK = 100;

/**
 * Seeds the demo data set of docs/demo-data.md. Idempotent by natural keys: rows that exist (live or
 * soft-deleted) are left alone, so a second run inserts nothing. On an empty database the ids come
 * out as docs/demo-data.md lists them. Runs in one transaction; works without entity metadata on every dialect.
 */
export async function seedDemo(dataSource: DataSource, options: SeedDemoOptions): Promise<SeedDemoResult> {
  const log = options.log ?? (() => undefined);
  // argon2 is deliberately slow: hash once, outside the transaction, and share the hash.
  const passwordHash = await hashPassword(options.password);
  const now = new Date();
  const audit = json({ created_by: 'seed', created_at: now.toISOString() });
  // UTC 'YYYY-MM-DD HH:MM:SS.mmm': a literal every dialect's timestamp column takes as is (D4).
  const lastModified = now.toISOString().replace('T', ' ').replace('Z', '');

  /** The convention columns of spec 2.1 (+ last_modified, D4) for prefix p. */
  const conventions = (p: string, addDtls: unknown = null, status = 1): Row => ({
    [`${p}_status`]: status,
    [`${p}_is_deleted`]: bit(false),
    [`${p}_audit_data`]: audit,
    [`${p}_add_dtls`]: json(addDtls),
    [`${p}_last_modified`]: lastModified,
  });

  const inserted: Record<string, number> = {};
  await dataSource.transaction(async (em) => {
    const seeder = new Seeder(em, inserted, log);

    // Tenants, in docs/demo-data.md order (ids 1, 2, 3 on an empty database).
    const existingTenants = await seeder.ids('app_tenants', 'tnt_id', 'tnt_tenant_code');
    await seeder.insert(
      'app_tenants',
      DEMO_TENANTS.filter((t) => !existingTenants.has(t.code)).map((t) => ({
        tnt_tenant_code: t.code,
        tnt_tenant_name: t.name,
        tnt_description: t.description,
        tnt_features: json(t.features),
        ...conventions('tnt', t.branding, t.status),
      })),
    );
    const tenantIds = await seeder.ids('app_tenants', 'tnt_id', 'tnt_tenant_code');
    const tenantId = (code: string): number => {
      const id = tenantIds.get(code);
      if (id === undefined) throw new Error(`Tenant ${code} is missing`);
      return id;
    };

    // Roles, unique per (tenant, code).
    const roleKey = (tenant: number, code: string) => `${tenant}/${code}`;
    const roleIds = async () =>
      seeder.ids('app_roles', 'rol_id', ['rol_tenant_id', 'rol_code'], (r) =>
        roleKey(Number(r.rol_tenant_id), String(r.rol_code)),
      );
    const existingRoles = await roleIds();
    await seeder.insert(
      'app_roles',
      DEMO_ROLES.filter((r) => !existingRoles.has(roleKey(tenantId(r.tenantCode), r.code))).map((r) => ({
        rol_tenant_id: tenantId(r.tenantCode),
        rol_code: r.code,
        rol_description: r.description,
        rol_permissions: json(r.permissions),
        ...conventions('rol'),
      })),
    );
    const allRoles = await roleIds();

    // Users, unique per (tenant, email); usr_role_id links the role (D8).
    const userKey = (tenant: number, email: string) => `${tenant}/${email.toLowerCase()}`;
    const existingUsers = await seeder.ids('app_users', 'usr_id', ['usr_tenant_id', 'usr_email_id'], (r) =>
      userKey(Number(r.usr_tenant_id), String(r.usr_email_id)),
    );
    await seeder.insert(
      'app_users',
      DEMO_USERS.filter((u) => !existingUsers.has(userKey(tenantId(u.tenantCode), u.email))).map((u) => {
        const tenant = tenantId(u.tenantCode);
        const roleId = allRoles.get(roleKey(tenant, u.roleCode));
        if (roleId === undefined) throw new Error(`Role ${u.roleCode} of tenant ${u.tenantCode} is missing`);
        return {
          usr_tenant_id: tenant,
          usr_email_id: u.email,
          usr_first_name: u.firstName,
          usr_last_name: u.lastName,
          usr_password_hash: passwordHash,
          usr_role_id: roleId,
          ...conventions('usr'),
        };
      }),
    );

    // System-wide configuration rows (tenant NULL).
    const existingValueSets = await seeder.systemCodes('app_value_sets', 'vs');
    await seeder.insert(
      'app_value_sets',
      DEMO_VALUE_SETS.filter((v) => !existingValueSets.has(v.code)).map((v) => ({
        vs_tenant_id: null,
        vs_code: v.code,
        vs_description: v.description,
        vs_values: json(v.values),
        ...conventions('vs'),
      })),
    );

    const existingEntities = await seeder.systemCodes('app_object_registries', 'obj');
    await seeder.insert(
      'app_object_registries',
      DEMO_ENTITIES.filter((e) => !existingEntities.has(e.code)).map((e) => ({
        obj_tenant_id: null,
        obj_code: e.code,
        obj_description: e.name,
        obj_type_code: 'TABLE',
        // 'default' = the configuration database (D3); obj_db_type NULL = its configured dialect.
        obj_connection_code: 'default',
        obj_payload: json(e.payload),
        obj_payload_object_name: e.table,
        obj_payload_identifier: e.identifier,
        obj_payload_column_prefix: e.prefix,
        obj_payload_table: e.table,
        obj_name: e.name,
        obj_db_key: e.identifier,
        obj_db_type: null,
        obj_connection_id: null,
        ...conventions('obj', { maintainedBy: e.maintainedBy }),
      })),
    );

    // prf_code is unique across tenants.
    const existingProfiles = await seeder.ids('app_object_profiles', 'prf_id', 'prf_code');
    await seeder.insert(
      'app_object_profiles',
      DEMO_PROFILES.filter((p) => !existingProfiles.has(p.code)).map((p) => ({
        prf_tenant_id: null,
        prf_code: p.code,
        prf_description: p.description,
        prf_object_code: p.objectCode,
        prf_mode_code: p.mode,
        prf_policy: json(p.policy),
        ...conventions('prf'),
      })),
    );

    const existingDataviews = await seeder.systemCodes('app_dataview_configs', 'dvc');
    await seeder.insert(
      'app_dataview_configs',
      DEMO_DATAVIEWS.filter((d) => !existingDataviews.has(d.code)).map((d) => ({
        dvc_tenant_id: null,
        dvc_code: d.code,
        dvc_description: d.description,
        dvc_source_entity: d.sourceEntity,
        dvc_config: json(d.config),
        dvc_page_config_id: null,
        dvc_is_default: bit(d.isDefault),
        ...conventions('dvc'),
      })),
    );

    const existingWorkflows = await seeder.ids(
      'app_workflow_configs',
      'wft_id',
      ['wft_code', 'wft_version'],
      (r) => `${String(r.wft_code)}@${Number(r.wft_version)}`,
      'wft_tenant_id IS NULL',
    );
    await seeder.insert(
      'app_workflow_configs',
      DEMO_WORKFLOWS.filter((w) => !existingWorkflows.has(`${w.code}@${w.version}`)).map((w) => ({
        wft_tenant_id: null,
        wft_code: w.code,
        wft_name: w.name,
        wft_description: w.description,
        wft_schema: json(w.schema),
        wft_version: w.version,
        ...conventions('wft'),
      })),
    );

    const existingNavigations = await seeder.systemCodes('app_navigation_configs', 'nav');
    await seeder.insert(
      'app_navigation_configs',
      DEMO_NAVIGATIONS.filter((n) => !existingNavigations.has(n.code)).map((n) => ({
        nav_tenant_id: null,
        nav_code: n.code,
        nav_structure: json(n.structure),
        ...conventions('nav'),
      })),
    );

    const existingPages = await seeder.systemCodes('app_page_configs', 'pgc');
    await seeder.insert(
      'app_page_configs',
      DEMO_PAGES.filter((p) => !existingPages.has(p.code)).map((p) => ({
        pgc_tenant_id: null,
        pgc_code: p.code,
        pgc_name: p.name,
        pgc_type: p.type,
        pgc_object_code: p.objectCode,
        pgc_schema: json(p.schema),
        ...conventions('pgc'),
      })),
    );

    // Demo entity rows: customers per (tenant, email); a tenant's orders only while it has none.
    inserted.demo_customers = 0;
    inserted.demo_orders = 0;
    for (const tenantCode of Object.keys(DEMO_ROW_COUNTS)) {
      const tenant = tenantId(tenantCode);
      const customerIds = async () =>
        seeder.ids('demo_customers', 'cus_id', 'cus_email', undefined, 'cus_tenant_id = :tenant', { tenant });
      const existingCustomers = await customerIds();
      const customers = demoCustomers(tenantCode);
      inserted.demo_customers += await seeder.insert(
        'demo_customers',
        customers
          .filter((c) => !existingCustomers.has(c.email))
          .map((c) => ({
            cus_name: c.name,
            cus_email: c.email,
            cus_phone: c.phone,
            cus_tier: c.tier,
            cus_credit_limit: c.creditLimit,
            cus_internal_notes: c.internalNotes,
            cus_tenant_id: tenant,
            ...conventions('cus'),
          })),
        false,
      );

      const orderCount = await em
        .createQueryBuilder()
        .select('COUNT(*)', 'n')
        .from('demo_orders', 'o')
        .where('o.ord_tenant_id = :tenant', { tenant })
        .getRawOne<{ n: number | string }>();
      if (Number(orderCount?.n ?? 0) > 0) continue;
      const byEmail = await customerIds();
      const emailOf = new Map(customers.map((c) => [c.number, c.email]));
      inserted.demo_orders += await seeder.insert(
        'demo_orders',
        demoOrders(tenantCode).map((o) => {
          const customerId = byEmail.get(emailOf.get(o.customerNumber) ?? '');
          if (customerId === undefined)
            throw new Error(`Customer ${o.customerNumber} of tenant ${tenantCode} is missing`);
          return {
            ord_customer_id: customerId,
            ord_amount: o.amount,
            ord_order_status: o.status,
            ord_ordered_at: o.orderedAt,
            ord_tenant_id: tenant,
            ...conventions('ord'),
          };
        }),
        false,
      );
    }
    log(`demo_customers: ${inserted.demo_customers} inserted`);
    log(`demo_orders: ${inserted.demo_orders} inserted`);

    // Each demo record's first version (history from version 1, restorable).
    inserted.app_audit_logs = 0;
    for (const tenantCode of Object.keys(DEMO_ROW_COUNTS))
      for (const entity of ['customers', 'orders'])
        inserted.app_audit_logs += await seedCreatedEntries(em, entity, tenantId(tenantCode), lastModified);
    log(`app_audit_logs: ${inserted.app_audit_logs} created entries inserted`);
  });
  return { inserted };
}

/** Small helpers over the query builder on tables without entity metadata. */
class Seeder {
  constructor(
    private readonly em: EntityManager,
    private readonly inserted: Record<string, number>,
    private readonly log: (msg: string) => void,
  ) {}

  /**
   * Map of natural key → id of the rows of `table` (matching `where`). `keyColumns` is one column,
   * or several combined by `keyOf`.
   */
  async ids(
    table: string,
    idColumn: string,
    keyColumns: string | string[],
    keyOf?: (row: Record<string, unknown>) => string,
    where?: string,
    params?: Record<string, SqlValue>,
  ): Promise<Map<string, number>> {
    const columns = Array.isArray(keyColumns) ? keyColumns : [keyColumns];
    let qb = this.em.createQueryBuilder().select(`t.${idColumn}`, idColumn).from(table, 't');
    for (const c of columns) qb = qb.addSelect(`t.${c}`, c);
    if (where) qb = qb.where(where, params);
    const rows: Array<Record<string, unknown>> = await qb.orderBy(`t.${idColumn}`, 'ASC').getRawMany();
    const key = keyOf ?? ((r: Record<string, unknown>) => String(r[columns[0]]));
    return new Map(rows.map((r) => [key(r), Number(r[idColumn])]));
  }

  /** Codes of the system-wide (tenant NULL) rows of a configuration table with prefix p. */
  async systemCodes(table: string, p: string): Promise<Map<string, number>> {
    return this.ids(table, `${p}_id`, `${p}_code`, undefined, `t.${p}_tenant_id IS NULL`);
  }

  /** Inserts rows in order, in chunks; returns the count (and records/logs it unless `report` is false). */
  async insert(table: string, rows: Row[], report = true): Promise<number> {
    if (rows.length > 0) {
      const columns = Object.keys(rows[0]);
      for (let i = 0; i < rows.length; i += CHUNK) {
        // Same column order in every row: without metadata the builder takes values positionally.
        const chunk = rows
          .slice(i, i + CHUNK)
          .map((r) => Object.fromEntries(columns.map((c) => [c, r[c] ?? null])));
        await this.em.createQueryBuilder().insert().into(table, columns).values(chunk).execute();
      }
    }
    if (report) {
      this.inserted[table] = rows.length;
      this.log(`${table}: ${rows.length} inserted`);
    }
    return rows.length;
  }
}
