import type { Dialect } from './dialect';

/** TypeORM's lock modes used for row locks (SelectQueryBuilder.setLock). */
export type RowLockMode = 'pessimistic_write' | 'pessimistic_read' | 'for_key_share';

/**
 * Row locks that make a delete's dependents check and a child's reference check exclude each other
 * (D25, issue 9): the parent being deleted is locked for update before its dependents are counted,
 * and a child write locks the parent it references (and re-reads it as live) before it commits.
 * PostgreSQL: FOR UPDATE / FOR KEY SHARE (key share is what a foreign key takes; FOR UPDATE is the one
 * lock that conflicts with it — a plain UPDATE of a non-key column does not). MariaDB/MySQL: FOR
 * UPDATE / LOCK IN SHARE MODE. SQL Server: WITH (UPDLOCK, ROWLOCK) on both sides, held to the end of
 * the transaction. SQLite: none needed — write transactions run one at a time.
 */
export function rowLockFor(
  dialect: Dialect,
  purpose: 'parent-of-delete' | 'referenced-parent',
): RowLockMode | undefined {
  switch (dialect) {
    case 'sqlite':
      return undefined;
    case 'postgres':
      return purpose === 'parent-of-delete' ? 'pessimistic_write' : 'for_key_share';
    case 'mysql':
      return purpose === 'parent-of-delete' ? 'pessimistic_write' : 'pessimistic_read';
    case 'mssql':
      return 'pessimistic_write';
  }
}
