export type Dialect = 'sqlite' | 'postgres' | 'mysql' | 'mssql';

/** Normalises a TypeORM driver type (or DB_TYPE) to the four SQL dialects the project speaks. */
export function dialectOf(driverType: string): Dialect {
  switch (driverType) {
    case 'better-sqlite3':
    case 'sqlite':
      return 'sqlite';
    case 'postgres':
      return 'postgres';
    case 'mysql':
    case 'mariadb':
      return 'mysql';
    case 'mssql':
      return 'mssql';
    default:
      throw new Error(`Unsupported database driver: ${driverType}`);
  }
}
