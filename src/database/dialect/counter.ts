import type { QueryRunner } from 'typeorm';
import { dialectOf, type Dialect } from './dialect';

/**
 * A per-key counter row (e.g. a tenant's last event number) advanced inside the caller's write
 * transaction: the step locks the row until the transaction ends, so writers of one key take
 * their numbers in commit order. The first step of a key also creates its row, and concurrent
 * first steps must neither fail, deadlock, nor take a second pooled connection (as many writers
 * as connections starting at once would each wait for another's — the pool starves):
 *
 * - PostgreSQL, SQLite: UPDATE … RETURNING; when no row was touched, INSERT … ON CONFLICT DO UPDATE
 *   (a concurrent creator's row is waited for and added to, never a duplicate-key error, which
 *   would abort a PostgreSQL transaction).
 * - MariaDB/MySQL: INSERT … ON DUPLICATE KEY UPDATE for a key not yet known to this process (it
 *   takes the row's exclusive lock at once; "INSERT IGNORE then UPDATE" takes a shared lock first,
 *   and two writers upgrading theirs deadlock; an UPDATE of a missing row takes a gap lock that
 *   blocks the other's insert the same way), a plain UPDATE once it is known (the upsert spends an
 *   auto-increment id per call).
 * - SQL Server: UPDATE WITH (UPDLOCK, HOLDLOCK) — it holds the key's range even when the row is
 *   missing, so a concurrent first writer waits there — then an INSERT when no row was touched.
 *
 * Table and column names are the caller's identifiers, never input.
 */
export interface CounterTable {
  table: string;
  keyColumn: string;
  valueColumn: string;
}

export interface CounterStatement {
  sql: string;
  params: unknown[];
}

export interface CounterSql {
  /** Adds to an existing row; its result carries the new value as `last` (or is read with `read`). */
  add: CounterStatement;
  /** Creates the row, or adds to it if a concurrent writer created it first. */
  create: CounterStatement;
  /** Reads the new value where `add`/`create` do not return it (MariaDB/MySQL, SQL Server). */
  read?: CounterStatement;
  /** Whether `add` must run before `create` for a key not yet known (it takes SQL Server's range lock). */
  addFirst: boolean;
}

export function counterSql(dialect: Dialect, t: CounterTable, key: number, step: number): CounterSql {
  const { table, keyColumn: k, valueColumn: v } = t;
  const n = Number(step);
  switch (dialect) {
    case 'postgres':
      return {
        add: {
          sql: `UPDATE ${table} SET ${v} = ${v} + $1 WHERE ${k} = $2 RETURNING ${v} AS last`,
          params: [n, key],
        },
        create: {
          sql:
            `INSERT INTO ${table} (${k}, ${v}) VALUES ($1, $2) ` +
            `ON CONFLICT (${k}) DO UPDATE SET ${v} = ${table}.${v} + EXCLUDED.${v} RETURNING ${v} AS last`,
          params: [key, n],
        },
        addFirst: true,
      };
    case 'sqlite':
      return {
        add: {
          sql: `UPDATE ${table} SET ${v} = ${v} + ? WHERE ${k} = ? RETURNING ${v} AS last`,
          params: [n, key],
        },
        create: {
          sql:
            `INSERT INTO ${table} (${k}, ${v}) VALUES (?, ?) ` +
            `ON CONFLICT (${k}) DO UPDATE SET ${v} = ${v} + excluded.${v} RETURNING ${v} AS last`,
          params: [key, n],
        },
        addFirst: true,
      };
    case 'mysql':
      return {
        add: { sql: `UPDATE ${table} SET ${v} = ${v} + ? WHERE ${k} = ?`, params: [n, key] },
        create: {
          sql: `INSERT INTO ${table} (${k}, ${v}) VALUES (?, ?) ON DUPLICATE KEY UPDATE ${v} = ${v} + ?`,
          params: [key, n, n],
        },
        read: { sql: `SELECT ${v} AS last FROM ${table} WHERE ${k} = ?`, params: [key] },
        addFirst: false,
      };
    case 'mssql':
      return {
        add: {
          sql: `UPDATE ${table} WITH (UPDLOCK, HOLDLOCK) SET ${v} = ${v} + @0 WHERE ${k} = @1`,
          params: [n, key],
        },
        create: { sql: `INSERT INTO ${table} (${k}, ${v}) VALUES (@0, @1)`, params: [key, n] },
        read: { sql: `SELECT ${v} AS last FROM ${table} WHERE ${k} = @0`, params: [key] },
        addFirst: true,
      };
  }
}

/**
 * Advances `key`'s counter by `step` on `qr` (in its transaction); the new value. `known` tells
 * whether this process has seen the key's row before (MariaDB then skips the upsert).
 */
export async function advanceCounter(
  qr: QueryRunner,
  t: CounterTable,
  key: number,
  step: number,
  known: boolean,
): Promise<number> {
  const sql = counterSql(dialectOf(qr.connection.driver.options.type), t, key, step);
  const run = async (s: CounterStatement): Promise<{ last?: number; affected: number }> => {
    const result = await qr.query(s.sql, s.params, true);
    const records = Array.isArray(result.records) ? (result.records as { last?: unknown }[]) : [];
    const last = records[0]?.last;
    return {
      last: last === undefined || last === null ? undefined : Number(last),
      affected: records.length > 0 ? records.length : Number(result.affected ?? 0),
    };
  };
  let outcome = known || sql.addFirst ? await run(sql.add) : { affected: 0 };
  if (outcome.affected === 0) outcome = await run(sql.create);
  if (outcome.last !== undefined) return outcome.last;
  const rows = await run(sql.read!);
  if (rows.last === undefined) throw new Error(`The counter row of ${t.table} ${key} is missing`);
  return rows.last;
}
