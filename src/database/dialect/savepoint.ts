import type { Dialect } from './dialect';

/**
 * The statements of a savepoint inside an open transaction (a bulk write's row, D51): set it, undo
 * back to it, forget it. SQL Server has no RELEASE; a savepoint there simply stays until the end.
 */
export interface SavepointSql {
  set: string;
  rollback: string;
  release: string | null;
}

/** `name` comes from code only (letters, digits, underscore). */
export function savepointSql(dialect: Dialect, name: string): SavepointSql {
  if (!/^[a-z_][a-z0-9_]*$/i.test(name)) throw new Error(`Invalid savepoint name ${name}`);
  if (dialect === 'mssql')
    return { set: `SAVE TRANSACTION ${name}`, rollback: `ROLLBACK TRANSACTION ${name}`, release: null };
  return {
    set: `SAVEPOINT ${name}`,
    rollback: `ROLLBACK TO SAVEPOINT ${name}`,
    release: `RELEASE SAVEPOINT ${name}`,
  };
}
