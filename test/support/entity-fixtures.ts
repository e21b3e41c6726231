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
