import { types } from 'node:util';
import { QueryFailedError } from 'typeorm';
import type { Dialect } from './dialect';

/** What the `ms-sql.query.failed` log event (spec §6.3) says about a database error. */
export interface DatabaseErrorInfo {
  /** From the driver that raised the error; undefined when its shape does not tell. */
  dialect: Dialect | undefined;
  /** The driver's code: SQLSTATE (PostgreSQL), ER_… (MariaDB/MySQL), SQLITE_…, the error number (SQL Server). */
  code: string | undefined;
  /** The driver's message, values masked (see safeDatabaseMessage). */
  message: string;
}

type Fields = Record<string, unknown>;

const SQLSTATE = /^[0-9A-Z]{5}$/;
/** Error classes of the mssql package (and tedious' RequestError). */
const MSSQL_ERROR_NAMES = new Set([
  'RequestError',
  'ConnectionError',
  'TransactionError',
  'PreparedStatementError',
  'MSSQLError',
]);
const MESSAGE_MAX = 500;
const REDACTED = '[redacted]';

function fieldsOf(value: unknown): Fields | undefined {
  return typeof value === 'object' && value !== null ? (value as Fields) : undefined;
}

function nameOf(e: Fields): string {
  const ctor = (e as { constructor?: { name?: unknown } }).constructor;
  return typeof ctor?.name === 'string' ? ctor.name : '';
}

/** The dialect whose driver raised `e`, told by the error's shape; undefined when it is no driver error. */
function driverDialect(e: Fields): Dialect | undefined {
  const code = e.code;
  const name = typeof e.name === 'string' ? e.name : '';
  if (typeof code === 'string' && code.startsWith('SQLITE_')) return 'sqlite';
  // pg (pg-protocol's DatabaseError): a 5-character SQLSTATE plus the server's severity.
  if (
    typeof code === 'string' &&
    SQLSTATE.test(code) &&
    (nameOf(e) === 'DatabaseError' || typeof e.severity === 'string')
  ) {
    return 'postgres';
  }
  // mysql2: the server's SQLSTATE and error number.
  if (typeof e.sqlState === 'string' && typeof e.errno === 'number') return 'mysql';
  // mssql / tedious: the error classes by name; a RequestError carries the server's error number.
  if (MSSQL_ERROR_NAMES.has(name) || MSSQL_ERROR_NAMES.has(nameOf(e))) {
    if (typeof e.number === 'number' || typeof code === 'string') return 'mssql';
  }
  return undefined;
}

/** The error the driver raised: a QueryFailedError's driverError, or the error itself. */
function driverErrorOf(err: unknown): Fields | undefined {
  const e = fieldsOf(err);
  if (!e) return undefined;
  return fieldsOf(e.driverError) ?? e;
}

/**
 * An Error, also one from another realm: better-sqlite3's native addon keeps the SqliteError class
 * (a plain function with Error.prototype in its chain) of the first context that loaded it, so in
 * a jest worker's later test file `instanceof Error` does not hold for it.
 */
function isErrorLike(err: unknown): boolean {
  if (err instanceof Error || types.isNativeError(err)) return true;
  const e = fieldsOf(err);
  return typeof e?.message === 'string' && typeof e.stack === 'string';
}

/**
 * A database error: TypeORM's QueryFailedError (also from another copy of TypeORM: anything with
 * a `driverError`), or a raw error of the pg, mysql2, better-sqlite3 or mssql driver.
 */
export function isDatabaseError(err: unknown): boolean {
  if (err instanceof QueryFailedError) return true;
  const e = fieldsOf(err);
  if (!e || !isErrorLike(err)) return false;
  if (fieldsOf(e.driverError) !== undefined) return true;
  return driverDialect(e) !== undefined;
}

/**
 * PostgreSQL SQLSTATEs of a lost or refused connection: class 08, admin and crash shutdown,
 * starting up (57P01-57P03), too many clients (53300).
 */
const PG_UNAVAILABLE = /^(08[0-9A-Z]{3}|57P0[123]|53300)$/;
/** Node's socket errors (also as drivers pass them on: mysql2, tedious, pg). */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'EAI_AGAIN',
]);
/** Driver codes of a lost or refused connection: mysql2 (and MariaDB's 1040 by name), mssql/tedious. */
const DRIVER_UNAVAILABLE_CODES = new Set([
  'PROTOCOL_CONNECTION_LOST',
  'ER_CON_COUNT_ERROR',
  'ESOCKET',
  'ECONNCLOSED',
]);
/** The drivers' own messages for a pool or connection that is gone (they carry no code). */
const UNAVAILABLE_MESSAGES = [
  // pg and pg-pool
  /^Connection terminated( unexpectedly| due to connection timeout)?$/,
  /^timeout exceeded when trying to connect$/,
  /^Client has encountered a connection error and is not queryable$/,
  /^Client was closed and is not queryable$/,
  /^Cannot use a pool after calling end on the pool$/,
  // mysql2
  /^Pool is closed\.?$/,
  /^Can't add new command when connection is in closed state$/,
  /^Connection lost: The server closed the connection\.?$/,
  // mssql (tarn's acquire timeout, as mssql rewords it)
  /^Failed to acquire a connection from the pool/,
];

/** One error's own fields say "connection-level failure" (no look at its causes). */
function unavailableItself(e: Fields): boolean {
  const code = typeof e.code === 'string' ? e.code : '';
  const message = typeof e.message === 'string' ? e.message : '';
  const name = typeof e.name === 'string' ? e.name : '';
  if (/^SQLITE_(BUSY|CANTOPEN)(_|$)/.test(code)) return true;
  if (PG_UNAVAILABLE.test(code) && driverDialect(e) === 'postgres') return true;
  // MariaDB/MySQL's connection-exception SQLSTATEs (08S01: server shutdown, network errors).
  if (typeof e.sqlState === 'string' && e.sqlState.startsWith('08')) return true;
  if (DRIVER_UNAVAILABLE_CODES.has(code)) return true;
  // mssql: every ConnectionError (login, socket, connect timeout, pool not open); ETIMEOUT is a
  // connect timeout there, a statement timeout on a RequestError (not connection-level).
  if (name === 'ConnectionError' || nameOf(e) === 'ConnectionError') return true;
  if (NETWORK_CODES.has(code)) return true;
  return UNAVAILABLE_MESSAGES.some((pattern) => pattern.test(message));
}

/**
 * A connection-level database failure: the pool cannot connect, or the connection it had was lost
 * (pg: ECONNREFUSED, ECONNRESET, ETIMEDOUT, "Connection terminated", "timeout exceeded when trying
 * to connect", SQLSTATE class 08, 57P01-57P03, 53300; mysql2: PROTOCOL_CONNECTION_LOST, ECONNREFUSED,
 * ER_CON_COUNT_ERROR, "Pool is closed"; mssql/tedious: ESOCKET, ECONNCLOSED, any ConnectionError;
 * better-sqlite3: SQLITE_BUSY (after the busy timeout), SQLITE_CANTOPEN). Looks through TypeORM's
 * `driverError`, `cause`, mssql's `originalError` and an AggregateError's `errors` (Node's connect
 * to every address of a host name). Not so: a failed statement (syntax, constraint, lock timeout).
 */
export function isDatabaseUnavailableError(err: unknown): boolean {
  const seen = new Set<unknown>();
  const visit = (value: unknown, depth: number): boolean => {
    const e = fieldsOf(value);
    if (!e || seen.has(e) || depth > 4) return false;
    seen.add(e);
    if (unavailableItself(e)) return true;
    const aggregated: unknown[] = Array.isArray(e.errors) ? (e.errors as unknown[]) : [];
    const nested = [e.driverError, e.cause, e.originalError, ...aggregated];
    return nested.some((n) => visit(n, depth + 1));
  };
  return visit(err, 0);
}

function codeOf(driver: Fields, dialect: Dialect | undefined): string | undefined {
  if (dialect === 'mssql' && typeof driver.number === 'number') return String(driver.number);
  if (typeof driver.code === 'string' && driver.code !== '') return driver.code;
  if (typeof driver.code === 'number') return String(driver.code);
  if (typeof driver.errno === 'number') return String(driver.errno);
  return undefined;
}

/** Parameter values as they may appear in a message (strings, numbers, dates; arrays flattened). */
function parameterTexts(parameters: unknown): string[] {
  if (!Array.isArray(parameters)) return [];
  const out: string[] = [];
  const visit = (p: unknown, depth: number): void => {
    if (Array.isArray(p) && depth < 3) p.forEach((x) => visit(x, depth + 1));
    else if (typeof p === 'string') out.push(p);
    else if (typeof p === 'number' || typeof p === 'bigint') out.push(String(p));
    else if (p instanceof Date && !Number.isNaN(p.getTime())) out.push(p.toISOString());
  };
  visit(parameters, 0);
  // Short values (ids, flags) would mask half the message and give away nothing.
  return [...new Set(out.filter((t) => t.length >= 4))].sort((a, b) => b.length - a.length);
}

/**
 * Where drivers quote the offending value inside their message (all four dialects). Identifiers
 * (table, column, constraint names) are kept: they are what makes the line useful.
 */
const VALUE_SLOTS: Array<[RegExp, string]> = [
  // MariaDB/MySQL: Duplicate entry 'alice@example.com' for key 'uq_email'
  [/(Duplicate entry )'[\s\S]*'( for key)/g, `$1'${REDACTED}'$2`],
  // SQL Server: … The duplicate key value is (alice@example.com).
  [/(duplicate key value is )\([\s\S]*\)/gi, `$1(${REDACTED})`],
  // PostgreSQL: invalid input syntax for type integer: "abc"; invalid input value for enum x: "y"
  [/(invalid input (?:syntax|value) for [^:]*:\s*)"[\s\S]*"/gi, `$1"${REDACTED}"`],
  // PostgreSQL: …out of range: "…"; date/time field value out of range: "…"
  [/(out of range:\s*)"[\s\S]*"/gi, `$1"${REDACTED}"`],
  // value 'x' / value "x" / value: 'x' (MySQL "Incorrect integer value: 'x' for column",
  // PostgreSQL `value "99999999999" is out of range`, SQL Server "converting the varchar value 'x'",
  // "Truncated value: 'x'")
  [/(\bvalue:? *)'(?:[^']|'')*'/gi, `$1'${REDACTED}'`],
  [/(\bvalue:? *)"(?:[^"]|"")*"/gi, `$1"${REDACTED}"`],
];

/**
 * The driver's message without the values of the statement: the parameters (when known) and the
 * values drivers quote in their messages are masked; at most 500 characters.
 */
export function safeDatabaseMessage(message: string, parameters?: unknown): string {
  let out = message;
  for (const text of parameterTexts(parameters)) out = out.split(text).join(REDACTED);
  for (const [pattern, replacement] of VALUE_SLOTS) out = out.replace(pattern, replacement);
  return out.length > MESSAGE_MAX ? `${out.slice(0, MESSAGE_MAX)}…` : out;
}

/**
 * The loggable facts of a database error: dialect, code and masked message, never the statement's
 * parameters (nor mysql2's `sql`, which has them inlined). Undefined when `err` is neither a database
 * error nor a connection-level failure (isDatabaseUnavailableError).
 */
export function describeDatabaseError(err: unknown): DatabaseErrorInfo | undefined {
  if (!isDatabaseError(err) && !isDatabaseUnavailableError(err)) return undefined;
  const e = err as Fields;
  const driver = driverErrorOf(err) ?? e;
  const dialect = driverDialect(driver) ?? driverDialect(e);
  const raw =
    typeof driver.message === 'string' && driver.message !== ''
      ? driver.message
      : typeof e.message === 'string'
        ? e.message
        : '';
  return {
    dialect,
    code: codeOf(driver, dialect) ?? codeOf(e, dialect),
    message: safeDatabaseMessage(raw, e.parameters),
  };
}
