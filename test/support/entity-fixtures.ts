import type { DataSource } from 'typeorm';

type Row = Record<string, unknown>;

async function copyRow(
  ds: DataSource,
  table: string,
  idColumn: string,
  where: string,
  overrides: Row,
): Promise<void> {
  const [row] = await ds.createQueryBuilder().select('t.*').from(table, 't').where(where).getRawMany<Row>();
  if (!row) throw new Error(`No row in ${table} where ${where}`);
  const copy = { ...row, ...overrides };
  delete copy[idColumn];
  await ds.createQueryBuilder().insert().into(table).values(copy).execute();
}

/**
 * A new entity by configuration only: copies the registry row of `from` under the code `to`
 * (with overrides such as obj_connection_code), and either copies its profile or inserts `profile`.
 */
export async function copyEntityConfig(
  ds: DataSource,
  from: string,
  to: string,
  options: { registry?: Row; profile?: Row } = {},
): Promise<void> {
  await copyRow(ds, 'app_object_registries', 'obj_id', `t.obj_code = '${from}'`, {
    obj_code: to,
    ...options.registry,
  });
  if (options.profile) {
    await ds
      .createQueryBuilder()
      .insert()
      .into('app_object_profiles')
      .values({ prf_code: to, prf_object_code: to, prf_status: 1, prf_is_deleted: 0, ...options.profile })
      .execute();
  } else {
    await copyRow(ds, 'app_object_profiles', 'prf_id', `t.prf_code = '${from}'`, {
      prf_code: to,
      prf_object_code: to,
    });
  }
}

/**
 * The registry payload (obj_payload JSON text) of `from` with its `relations` replaced: a copy of an
 * entity whose dependents live elsewhere, or that names other dependents.
 */
export async function payloadWithRelations(
  ds: DataSource,
  from: string,
  relations: unknown[],
): Promise<string> {
  const [row] = await ds
    .createQueryBuilder()
    .select('r.obj_payload', 'payload')
    .from('app_object_registries', 'r')
    .where('r.obj_code = :from AND r.obj_tenant_id IS NULL', { from })
    .getRawMany<{ payload: string }>();
  if (!row) throw new Error(`No system registry row ${from}`);
  return JSON.stringify({ ...(JSON.parse(row.payload) as Row), relations });
}

/**
 * Customers of `tenantId` up to `total` live rows (the demo seed has 50 in acme): deterministic
 * names, e-mails, phones, tiers and credit limits, inserted in batches of 500. The rows a 10,000-row
 * export reads.
 */
export async function fillCustomers(ds: DataSource, tenantId: number, total: number): Promise<number> {
  const [{ n }] = await ds.query<Array<{ n: unknown }>>(
    `SELECT COUNT(*) AS n FROM demo_customers WHERE cus_tenant_id = ${Number(tenantId)} AND cus_is_deleted = ${ds.options.type === 'postgres' ? 'false' : '0'}`,
  );
  const live = Number(n);
  const stamp = new Date().toISOString().replace('T', ' ').replace('Z', '');
  for (let start = live; start < total; start += 500) {
    const chunk: Row[] = [];
    for (let i = start; i < Math.min(total, start + 500); i++)
      chunk.push({
        cus_tenant_id: tenantId,
        cus_name: `Bulk customer ${i}`,
        cus_email: `bulk-${tenantId}-${i}@fill.example`,
        cus_phone: `+1 555 ${String(i).padStart(7, '0')}`,
        cus_tier: ['bronze', 'silver', 'gold'][i % 3],
        cus_credit_limit: i % 100000,
        cus_status: 1,
        cus_is_deleted: false,
        cus_last_modified: stamp,
      });
    await ds.createQueryBuilder().insert().into('demo_customers', Object.keys(chunk[0])).values(chunk).execute();
  }
  return Math.max(0, total - live);
}
