import { AppError, ConflictError, ValidationError } from '../../common/errors/app-error';

/**
 * The column a NOT NULL violation names, from the driver's error (PostgreSQL's `column`, or the
 * message of SQLite, MariaDB/MySQL and SQL Server); undefined when it cannot be told.
 */
function notNullColumn(d: Record<string, unknown>): string | undefined {
  if (typeof d.column === 'string') return d.column;
  const message = typeof d.message === 'string' ? d.message : '';
  const m =
    /NOT NULL constraint failed: [\w.]*?\.?(\w+)$/.exec(message) ??
    /Column '(\w+)' cannot be null/.exec(message) ??
    /value NULL into column '(\w+)'/.exec(message);
  return m?.[1];
}

/**
 * A deadlock, serialization failure or lock-wait timeout: nothing was written, and the same work
 * may simply run again (PostgreSQL 40P01/40001, MariaDB/MySQL 1213/1205, SQL Server 1205).
 */
export class BusyError extends ConflictError {
  constructor(message = 'The record is busy with a concurrent change; retry') {
    super(message, null, 'busy');
  }
}

/** Whether `err` (a driver error, TypeORM's wrapper of one, or a BusyError) means "busy: run again". */
export function isBusyError(err: unknown): boolean {
  if (err instanceof BusyError) return true;
  if (err instanceof AppError) return false;
  const e = err as { driverError?: Record<string, unknown> } & Record<string, unknown>;
  const d = e?.driverError ?? e ?? {};
  const code = typeof d.code === 'string' ? d.code : '';
  const errno = Number(d.errno ?? d.number ?? NaN);
  return code === '40P01' || code === '40001' || errno === 1213 || errno === 1205;
}

/** The driver's code and number of a driver error or of TypeORM's wrapper of one. */
function driverCodes(err: unknown): { code: string; errno: number } {
  const e = err as { driverError?: Record<string, unknown> } & Record<string, unknown>;
  const d = e?.driverError ?? e ?? {};
  return { code: typeof d.code === 'string' ? d.code : '', errno: Number(d.errno ?? d.number ?? NaN) };
}

/** A unique (or primary key) violation, on every dialect. */
export function isUniqueViolation(err: unknown): boolean {
  const { code, errno } = driverCodes(err);
  return (
    code === '23505' ||
    code === 'ER_DUP_ENTRY' ||
    errno === 2627 ||
    errno === 2601 ||
    /^SQLITE_CONSTRAINT_(UNIQUE|PRIMARYKEY)$/.test(code)
  );
}

/** A foreign key refusal (a row still referenced, or a reference to no row), on every dialect. */
export function isForeignKeyViolation(err: unknown): boolean {
  const { code, errno } = driverCodes(err);
  return (
    code === '23503' ||
    errno === 1451 ||
    errno === 1452 ||
    errno === 547 ||
    code === 'SQLITE_CONSTRAINT_FOREIGNKEY'
  );
}

/** What a translation needs of an entity: its fields' names and columns (the registry's EntityInfo). */
export interface FieldColumns {
  fields: ReadonlyArray<{ name: string; column: string }>;
}

/** A DB constraint error turned into the service's codes; anything else is rethrown as is. */

export function translateDbError(err: unknown, entity: FieldColumns): unknown {
  if (err instanceof AppError) return err;
  const e = err as { driverError?: Record<string, unknown> } & Record<string, unknown>;
  const d = e?.driverError ?? e ?? {};
  const code = typeof d.code === 'string' ? d.code : '';
  const errno = Number(d.errno ?? d.number ?? NaN);
  if (isUniqueViolation(err))
    return new ConflictError('A record with the same unique values already exists', null, 'duplicate_value');
  // A deadlock or serialization failure: nothing was written, the same request may simply be retried.
  if (isBusyError(err)) return new BusyError();
  if (code === '23502' || errno === 1048 || errno === 515 || code === 'SQLITE_CONSTRAINT_NOTNULL') {
    // A column the registry leaves optional but the table does not (users.status, say).
    const column = notNullColumn(d);
    const field = entity.fields.find((f) => f.column === column)?.name ?? 'body';
    return new ValidationError('Validation failed', [{ field, error: 'must not be null' }]);
  }
  if (code === '23503' || errno === 1452 || errno === 547 || code === 'SQLITE_CONSTRAINT_FOREIGNKEY')
    return new ValidationError('Validation failed', [
      { field: 'body', error: 'references a record that does not exist' },
    ]);
  if (code === '23514' || errno === 3819 || errno === 4025 || code === 'SQLITE_CONSTRAINT_CHECK')
    return new ValidationError('Validation failed', [
      { field: 'body', error: 'a value breaks a rule of the table' },
    ]);
  if (/^22/.test(code) || [1264, 1265, 1292, 1366, 1406, 8115, 8152].includes(errno))
    return new ValidationError('Validation failed', [
      { field: 'body', error: 'a value does not fit its column' },
    ]);
  return err;
}
