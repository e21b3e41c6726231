import type { DataSource } from 'typeorm';
import { encryptConnectionString } from '../../src/database/connections/connection-string.crypto';
import { copyEntityConfig, payloadWithRelations } from './entity-fixtures';
import {
  createTestDatabase,
  migratedDataSource,
  TestDatabase,
  TestDialect,
  testDialect,
} from './test-database';

/** Key of the app_connections rows the tests write (CONNECTION_ENCRYPTION_KEY of their apps). */
export const CONNECTION_TEST_KEY = 'b1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f91';

/** The "other" database of a run: MariaDB under PostgreSQL and the other way round; SQLite on SQLite. */
export const externalDialect: TestDialect =
  testDialect() === 'postgres' ? 'mariadb' : testDialect() === 'mariadb' ? 'postgres' : 'sqlite';

export function connectionUrlOf(db: TestDatabase): string {
  const c = db.config;
  if (c.type === 'sqlite') return `sqlite://${c.name}`;
  return `${c.type}://${encodeURIComponent(c.user)}:${encodeURIComponent(c.password)}@${c.host}:${c.port}/${c.name}`;
}

export function connectionTypeOf(db: TestDatabase): string {
  return db.dialect === 'postgres' ? 'postgresql' : db.dialect;
}

/** A migrated configuration database holding the given app_connections rows (before the app starts). */
export async function configDbWith(
  label: string,
  rows: Array<{ code: string; url: string; type: string }>,
): Promise<TestDatabase> {
  const db = await createTestDatabase(label);
  const ds = await migratedDataSource(db);
  try {
    for (const row of rows) {
      await ds
        .createQueryBuilder()
        .insert()
        .into('app_connections')
        .values({
          con_code: row.code,
          con_connection_string: encryptConnectionString(row.url, CONNECTION_TEST_KEY),
          con_connection_type: row.type,
        })
        .execute();
    }
  } finally {
    await ds.destroy();
  }
  return db;
}

/** A migrated database of `externalDialect` to serve as an external connection. */
export async function externalTestDatabase(label: string): Promise<TestDatabase> {
  const db = await createTestDatabase(label, externalDialect);
  const ds = await migratedDataSource(db);
  await ds.destroy();
  return db;
}

/**
 * Customer rows in an external database (its demo_customers table; its app_tenants rows exist only
 * for the foreign key, ids 1 and 2 like acme and globex).
 */
export async function seedExternalCustomers(
  ext: DataSource,
  rows: ReadonlyArray<readonly [tenant: number, name: string]>,
): Promise<void> {
  for (const code of ['ext-acme', 'ext-globex']) {
    await ext
      .createQueryBuilder()
      .insert()
      .into('app_tenants')
      .values({ tnt_tenant_code: code, tnt_tenant_name: code })
      .execute();
  }
  for (const [tenant, name] of rows) {
    await ext
      .createQueryBuilder()
      .insert()
      .into('demo_customers')
      .values({
        cus_tenant_id: tenant,
        cus_name: name,
        cus_email: `${name.toLowerCase().replace(/\W+/g, '.')}@remote.example`,
        cus_status: 1,
        cus_is_deleted: 0,
      })
      .execute();
  }
}

/**
 * Registry and profile rows (in the configuration database `cfg`) of `code`: a copy of `customers`
 * on connection `connection`, without customers' relation to orders (which live elsewhere).
 */
export async function remoteCustomersEntity(
  cfg: DataSource,
  code: string,
  connection: string,
): Promise<void> {
  await copyEntityConfig(cfg, 'customers', code, {
    registry: {
      obj_connection_code: connection,
      obj_payload: await payloadWithRelations(cfg, 'customers', []),
    },
  });
}
