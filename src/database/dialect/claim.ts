import type { QueryRunner, SelectQueryBuilder } from 'typeorm';
import { dialectOf, type Dialect } from './dialect';

/**
 * The skip-locked claim of a queue row (D49): a worker reads the next claimable rows and locks
 * them, skipping rows another worker holds, so every row is claimed by exactly one worker.
 * PostgreSQL and MariaDB ≥ 10.6: `FOR UPDATE SKIP LOCKED`; SQL Server: `WITH (UPDLOCK, READPAST,
 * ROWLOCK)`; SQLite: a plain read — its write transactions run one at a time, which makes the
 * claim exclusive already.
 */
export interface ClaimStatement {
  sql: string;
  params: unknown[];
}

/** The claim statement for `qb` (a SELECT of the candidate rows, ordered and limited) on `qr`. */
export function skipLockedClaim(
  qr: QueryRunner,
  qb: SelectQueryBuilder<Record<string, unknown>>,
): ClaimStatement {
  const dialect: Dialect = dialectOf(qr.connection.driver.options.type);
  if (dialect === 'sqlite') {
    const [sql, params] = qb.getQueryAndParameters();
    return { sql, params };
  }
  qb.setLock('pessimistic_write').setOnLocked('skip_locked');
  const [sql, params] = qb.getQueryAndParameters();
  // TypeORM writes SQL Server's lock as WITH (UPDLOCK, ROWLOCK); READPAST is what skips held rows.
  return {
    sql:
      dialect === 'mssql'
        ? sql.replace(/WITH \(UPDLOCK, ROWLOCK\)/g, 'WITH (UPDLOCK, READPAST, ROWLOCK)')
        : sql,
    params,
  };
}
