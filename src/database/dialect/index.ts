import type { TableColumnOptions } from 'typeorm';

export { type Dialect, dialectOf } from './dialect';
import type { Dialect } from './dialect';

type ColumnType = Pick<TableColumnOptions, 'type' | 'length' | 'precision' | 'scale'>;

/** Column types per dialect: JSON as text (NVARCHAR(MAX) on SQL Server, D1), BIT, ms timestamps (D4). */
export interface DialectTypes {
  string(length: number): ColumnType;
  json: ColumnType;
  longText: ColumnType;
  bool: ColumnType;
  int: ColumnType;
  /** Auto-increment primary key type (SQLite needs INTEGER for AUTOINCREMENT). */
  id: ColumnType;
  decimal(precision: number, scale: number): ColumnType;
  date: ColumnType;
  timestamp: ColumnType;
}

export function dialectTypes(dialect: Dialect): DialectTypes {
  const common = {
    int: { type: 'int' },
    id: { type: 'int' },
    decimal: (precision: number, scale: number) => ({ type: 'decimal', precision, scale }),
    date: { type: 'date' },
  };
  switch (dialect) {
    case 'mssql':
      return {
        ...common,
        string: (length) => ({ type: 'nvarchar', length: String(length) }),
        json: { type: 'nvarchar', length: 'MAX' },
        longText: { type: 'nvarchar', length: 'MAX' },
        bool: { type: 'bit' },
        timestamp: { type: 'datetime2', precision: 3 },
      };
    case 'postgres':
      return {
        ...common,
        string: (length) => ({ type: 'varchar', length: String(length) }),
        json: { type: 'text' },
        longText: { type: 'text' },
        bool: { type: 'boolean' },
        timestamp: { type: 'timestamp', precision: 3 },
      };
    case 'mysql':
      return {
        ...common,
        string: (length) => ({ type: 'varchar', length: String(length) }),
        json: { type: 'longtext' },
        longText: { type: 'longtext' },
        bool: { type: 'tinyint' },
        timestamp: { type: 'datetime', precision: 3 },
      };
    case 'sqlite':
      return {
        ...common,
        id: { type: 'integer' },
        string: (length) => ({ type: 'varchar', length: String(length) }),
        json: { type: 'text' },
        longText: { type: 'text' },
        bool: { type: 'boolean' },
        timestamp: { type: 'datetime' },
      };
  }
}

export { rowLockFor, type RowLockMode } from './row-locks';
export { fromDbTimestamp, toDbTimestamp } from './timestamps';

/**
 * `column = :param` compared exactly (case and trailing spaces count) on every dialect: MariaDB's
 * and SQL Server's default collations compare case-insensitively, so a code filter there would
 * match `WFR_LIST` for `wfr_list`. `column` and `param` are identifiers of the caller, never input.
 */
export function exactEquals(dialect: Dialect, column: string, param: string): string {
  if (dialect === 'mysql') return `BINARY ${column} = :${param}`;
  if (dialect === 'mssql') return `${column} = :${param} COLLATE Latin1_General_100_BIN2`;
  return `${column} = :${param}`;
}
