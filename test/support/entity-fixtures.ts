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
