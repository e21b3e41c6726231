import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runInNewContext } from 'node:vm';
import { DatabaseError } from 'pg-protocol';
import { DataSource, QueryFailedError } from 'typeorm';
import {
  describeDatabaseError,
  isDatabaseError,
  isDatabaseUnavailableError,
  safeDatabaseMessage,
} from './driver-errors';

/** pg's error as pg-protocol's parser builds it from the server's ErrorResponse. */
function pgError(message: string, code: string): DatabaseError {
  const err = new DatabaseError(message, 100, 'error');
  err.severity = 'ERROR';
  err.code = code;
  err.detail = 'Key (email)=(alice@example.com) already exists.';
  return err;
}

/** mysql2's error: a plain Error with the server's code, errno and SQLSTATE, and the inlined SQL. */
function mysqlError(message: string, code: string, errno: number, sqlState: string): Error {
  return Object.assign(new Error(message), {
    code,
    errno,
    sqlState,
    sqlMessage: message,
    sql: "INSERT INTO t (email) VALUES ('alice@example.com')",
  });
}

/** The mssql package's RequestError, as its tedious driver raises it. */
function mssqlError(message: string, number: number): Error {
  const { RequestError } = jest.requireActual<{ RequestError: new (e: Error, code: string) => Error }>(
    'mssql',
  );
  const cause = Object.assign(new Error(message), {
    code: 'EREQUEST',
    info: { number, state: 1, class: 14 },
  });
  return new RequestError(cause, 'EREQUEST');
}

/** A socket error as Node raises it (and pg, mysql2 and tedious pass it on). */
function socketError(code: string, syscall = 'connect'): Error {
  return Object.assign(new Error(`${syscall} ${code} 127.0.0.1:5432`), { code, errno: -111, syscall });
}

/** The mssql package's own error classes. */
const mssql = jest.requireActual<{
  ConnectionError: new (message: string, code?: string) => Error;
  RequestError: new (message: string, code?: string) => Error;
}>('mssql');

/** The rejection of `run`, which must reject. */
async function rejection(run: () => Promise<unknown>): Promise<unknown> {
  return run().then(
    () => {
      throw new Error('expected a rejection');
    },
    (err: unknown) => err,
  );
}

describe('database errors', () => {
  let sqlite: DataSource;

  beforeAll(async () => {
    sqlite = new DataSource({ type: 'better-sqlite3', database: ':memory:' });
    await sqlite.initialize();
    await sqlite.query('CREATE TABLE t (email varchar(100) UNIQUE)');
    await sqlite.query('INSERT INTO t (email) VALUES (?)', ['alice@example.com']);
  });

  afterAll(async () => {
    await sqlite.destroy();
  });

  async function sqliteFailure(sql: string, parameters: unknown[] = []): Promise<unknown> {
    return sqlite.query(sql, parameters).then(
      () => {
        throw new Error('expected the statement to fail');
      },
      (err: unknown) => err,
    );
  }

  describe(isDatabaseError.name, () => {
    it('should recognise a QueryFailedError of the real SQLite driver and the raw driver error', async () => {
      const err = await sqliteFailure('SELECT x FROM no_such_table');
      expect(err).toBeInstanceOf(QueryFailedError);
      expect(isDatabaseError(err)).toBe(true);
      expect(isDatabaseError((err as QueryFailedError).driverError)).toBe(true);
    });

    it('should recognise raw pg, mysql2 and mssql errors by their shape', () => {
      expect(isDatabaseError(pgError('relation "t" does not exist', '42P01'))).toBe(true);
      expect(
        isDatabaseError(mysqlError("Table 'db.t' doesn't exist", 'ER_NO_SUCH_TABLE', 1146, '42S02')),
      ).toBe(true);
      expect(isDatabaseError(mssqlError("Invalid object name 't'.", 208))).toBe(true);
    });

    it('should recognise a driver error from another realm (a jest worker reusing a native addon)', () => {
      const sqliteLike = runInNewContext(`
        function SqliteError(message, code) {
          Error.captureStackTrace(this, SqliteError);
          this.message = message;
          this.code = code;
        }
        Object.setPrototypeOf(SqliteError.prototype, Error.prototype);
        new SqliteError('no such table: t', 'SQLITE_ERROR');
      `);
      expect(sqliteLike instanceof Error).toBe(false);
      expect(describeDatabaseError(sqliteLike)).toEqual({
        dialect: 'sqlite',
        code: 'SQLITE_ERROR',
        message: 'no such table: t',
      });
    });

    it('should recognise a QueryFailedError of another TypeORM copy by its driverError', () => {
      const foreign = Object.assign(new Error('boom'), { query: 'SELECT 1', driverError: new Error('boom') });
      expect(isDatabaseError(foreign)).toBe(true);
    });

    it('should not take other errors for database errors', () => {
      expect(isDatabaseError(new Error('boom'))).toBe(false);
      expect(isDatabaseError(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }))).toBe(false);
      expect(isDatabaseError(Object.assign(new Error('x'), { code: 'ABCDE' }))).toBe(false);
      expect(isDatabaseError('SQLITE_ERROR')).toBe(false);
      expect(isDatabaseError(null)).toBe(false);
      expect(isDatabaseError({ code: 'SQLITE_ERROR', message: 'not an Error' })).toBe(false);
    });
  });

  describe(describeDatabaseError.name, () => {
    it('should tell dialect, code and message of a SQLite failure', async () => {
      expect(describeDatabaseError(await sqliteFailure('SELECT x FROM no_such_table'))).toEqual({
        dialect: 'sqlite',
        code: 'SQLITE_ERROR',
        message: 'no such table: no_such_table',
      });
    });

    it('should tell dialect and code of each driver', () => {
      expect(describeDatabaseError(pgError('relation "t" does not exist', '42P01'))).toEqual({
        dialect: 'postgres',
        code: '42P01',
        message: 'relation "t" does not exist',
      });
      expect(
        describeDatabaseError(mysqlError("Table 'db.t' doesn't exist", 'ER_NO_SUCH_TABLE', 1146, '42S02')),
      ).toEqual({ dialect: 'mysql', code: 'ER_NO_SUCH_TABLE', message: "Table 'db.t' doesn't exist" });
      expect(describeDatabaseError(mssqlError("Invalid object name 't'.", 208))).toEqual({
        dialect: 'mssql',
        code: '208',
        message: "Invalid object name 't'.",
      });
    });

    it('should read the driver error inside a QueryFailedError', () => {
      const err = new QueryFailedError(
        'SELECT * FROM t',
        [],
        pgError('relation "t" does not exist', '42P01'),
      );
      expect(describeDatabaseError(err)).toMatchObject({ dialect: 'postgres', code: '42P01' });
    });

    it('should leave the dialect open when the driver cannot be told', () => {
      const err = new QueryFailedError('SELECT 1', [], new Error('something failed'));
      expect(describeDatabaseError(err)).toEqual({
        dialect: undefined,
        code: undefined,
        message: 'something failed',
      });
    });

    it('should answer undefined for anything that is no database error', () => {
      expect(describeDatabaseError(new Error('boom'))).toBeUndefined();
    });

    it("should never carry the statement's parameters, mysql2's inlined SQL or pg's detail", async () => {
      const secret = 'alice@example.com';
      const failures = [
        await sqliteFailure('INSERT INTO t (email) VALUES (?)', [secret]),
        new QueryFailedError(
          'INSERT INTO t (email) VALUES ($1)',
          [secret],
          pgError('duplicate key', '23505'),
        ),
        new QueryFailedError(
          'INSERT INTO t (email) VALUES (?)',
          [secret],
          mysqlError(`Duplicate entry '${secret}' for key 'uq'`, 'ER_DUP_ENTRY', 1062, '23000'),
        ),
        mysqlError(`Duplicate entry '${secret}' for key 'uq'`, 'ER_DUP_ENTRY', 1062, '23000'),
        mssqlError(`Violation of UNIQUE KEY constraint 'uq'. The duplicate key value is (${secret}).`, 2627),
      ];
      for (const err of failures) {
        const info = describeDatabaseError(err);
        expect(info).toBeDefined();
        expect(JSON.stringify(info)).not.toContain(secret);
      }
    });
  });

  describe(safeDatabaseMessage.name, () => {
    it.each([
      [
        'invalid input syntax for type integer: "s3cr3t-value"',
        'invalid input syntax for type integer: "[redacted]"',
      ],
      ['invalid input value for enum mood: "s3cr3t"', 'invalid input value for enum mood: "[redacted]"'],
      [
        'value "99999999999" is out of range for type integer',
        'value "[redacted]" is out of range for type integer',
      ],
      [
        'date/time field value out of range: "2024-13-45"',
        'date/time field value out of range: "[redacted]"',
      ],
      [
        "Duplicate entry 'bob@example.com' for key 'uq_email'",
        "Duplicate entry '[redacted]' for key 'uq_email'",
      ],
      [
        "Incorrect integer value: 'abc' for column 'n' at row 1",
        "Incorrect integer value: '[redacted]' for column 'n' at row 1",
      ],
      [
        "Conversion failed when converting the nvarchar value 'abc' to data type int.",
        "Conversion failed when converting the nvarchar value '[redacted]' to data type int.",
      ],
      [
        "Cannot insert duplicate key in object 'dbo.t'. The duplicate key value is (bob@example.com, 7).",
        "Cannot insert duplicate key in object 'dbo.t'. The duplicate key value is ([redacted]).",
      ],
    ])('should mask the value in %j', (message, expected) => {
      expect(safeDatabaseMessage(message)).toBe(expected);
    });

    it('should keep identifiers, which are no values', () => {
      for (const message of [
        'duplicate key value violates unique constraint "uq_email"',
        'null value in column "name" of relation "t" violates not-null constraint',
        'relation "no_such_table" does not exist',
        "Table 'db.t' doesn't exist",
        'UNIQUE constraint failed: t.email',
      ]) {
        expect(safeDatabaseMessage(message)).toBe(message);
      }
    });

    it('should mask every known parameter value wherever the driver put it', () => {
      expect(
        safeDatabaseMessage('check constraint "x" failed for row (s3cr3t-value, 12345)', [
          's3cr3t-value',
          12345,
          [new Date(0)],
          'ab',
        ]),
      ).toBe('check constraint "x" failed for row ([redacted], [redacted])');
    });

    it('should cut a long message', () => {
      expect(safeDatabaseMessage('x'.repeat(2000))).toHaveLength(501);
    });
  });
  describe(isDatabaseUnavailableError.name, () => {
    it.each<[string, () => unknown]>([
      ['a refused connect (pg, mysql2)', () => socketError('ECONNREFUSED')],
      ['a reset connection', () => socketError('ECONNRESET', 'read')],
      ['a connect timeout', () => socketError('ETIMEDOUT')],
      [
        'an AggregateError of every address of the host',
        () => new AggregateError([socketError('ECONNREFUSED')]),
      ],
      ['pg: Connection terminated unexpectedly', () => new Error('Connection terminated unexpectedly')],
      ['pg: Connection terminated', () => new Error('Connection terminated')],
      ['pg-pool: the connect timeout', () => new Error('timeout exceeded when trying to connect')],
      [
        'pg: a query on a broken client',
        () => new Error('Client has encountered a connection error and is not queryable'),
      ],
      ['pg: SQLSTATE 08006 (connection failure)', () => pgError('connection failure', '08006')],
      [
        'pg: 57P01 (admin shutdown)',
        () => pgError('terminating connection due to administrator command', '57P01'),
      ],
      ['pg: 57P02 (crash shutdown)', () => pgError('terminating connection because of crash', '57P02')],
      ['pg: 57P03 (starting up)', () => pgError('the database system is starting up', '57P03')],
      ['pg: 53300 (too many clients)', () => pgError('sorry, too many clients already', '53300')],
      [
        'mysql2: PROTOCOL_CONNECTION_LOST',
        () =>
          Object.assign(new Error('Connection lost: The server closed the connection.'), {
            code: 'PROTOCOL_CONNECTION_LOST',
            fatal: true,
          }),
      ],
      [
        'mysql2: ER_CON_COUNT_ERROR',
        () => mysqlError('Too many connections', 'ER_CON_COUNT_ERROR', 1040, '08004'),
      ],
      [
        'mysql2: server shutdown (08S01)',
        () => mysqlError('Server shutdown in progress', 'ER_SERVER_SHUTDOWN', 1053, '08S01'),
      ],
      ['mysql2: Pool is closed', () => new Error('Pool is closed.')],
      [
        'mysql2: a command on a closed connection',
        () =>
          Object.assign(new Error("Can't add new command when connection is in closed state"), {
            fatal: true,
          }),
      ],
      [
        'mssql: ConnectionError ESOCKET',
        () =>
          new mssql.ConnectionError('Failed to connect to db:1433 - Could not connect (sequence)', 'ESOCKET'),
      ],
      [
        'mssql: ConnectionError ETIMEOUT',
        () => new mssql.ConnectionError('Failed to connect in 15000ms', 'ETIMEOUT'),
      ],
      [
        'mssql: ConnectionError ELOGIN',
        () => new mssql.ConnectionError("Login failed for user 'sa'.", 'ELOGIN'),
      ],
      [
        'mssql: a request on a closed connection (ECONNCLOSED)',
        () => new mssql.RequestError('Connection closed before request completed.', 'ECONNCLOSED'),
      ],
      [
        'mssql: the pool acquire timeout',
        () =>
          Object.assign(new Error('Failed to acquire a connection from the pool: operation timed out'), {
            name: 'TimeoutError',
          }),
      ],
      [
        'a pg error wrapped by TypeORM',
        () => new QueryFailedError('SELECT 1', [], new Error('Connection terminated unexpectedly')),
      ],
      [
        'an error with the cause inside',
        () => new Error('query failed', { cause: socketError('ECONNRESET', 'read') }),
      ],
    ])('should recognise %s', (_label, make) => {
      expect(isDatabaseUnavailableError(make())).toBe(true);
    });

    it('should recognise SQLITE_BUSY and SQLITE_CANTOPEN of the real driver', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'db-errors-'));
      const file = join(dir, 'locked.sqlite');
      const holder = new DataSource({ type: 'better-sqlite3', database: file });
      const other = new DataSource({
        type: 'better-sqlite3',
        database: file,
        prepareDatabase: (db: { pragma(sql: string): unknown }) => {
          db.pragma('busy_timeout = 0');
        },
      });
      await holder.initialize();
      await other.initialize();
      const lock = holder.createQueryRunner();
      try {
        await holder.query('CREATE TABLE t (n integer)');
        await lock.query('BEGIN IMMEDIATE');
        const busy = await rejection(() => other.query('INSERT INTO t VALUES (2)'));
        expect(busy).toBeInstanceOf(QueryFailedError);
        expect((busy as QueryFailedError & { driverError: { code: string } }).driverError.code).toMatch(
          /^SQLITE_BUSY/,
        );
        expect(isDatabaseUnavailableError(busy)).toBe(true);
        expect(isDatabaseUnavailableError((busy as QueryFailedError).driverError)).toBe(true);
        // A directory where the database file should be: the driver's own SQLITE_CANTOPEN.
        const cantOpen = await rejection(() =>
          new DataSource({ type: 'better-sqlite3', database: dir }).initialize(),
        );
        expect((cantOpen as { code?: string }).code).toBe('SQLITE_CANTOPEN');
        expect(isDatabaseUnavailableError(cantOpen)).toBe(true);
      } finally {
        await lock.query('ROLLBACK');
        await lock.release();
        await holder.destroy();
        await other.destroy();
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it.each<[string, () => unknown]>([
      ['a plain error', () => new Error('boom')],
      ['pg: a syntax error', () => pgError('syntax error at or near "x"', '42601')],
      ['pg: a unique violation', () => pgError('duplicate key', '23505')],
      ['pg: a deadlock', () => pgError('deadlock detected', '40P01')],
      [
        'pg: a statement timeout (57014)',
        () => pgError('canceling statement due to statement timeout', '57014'),
      ],
      [
        'pg: SQLSTATE 08006 without the shape of a pg error',
        () => Object.assign(new Error('x'), { code: '08006' }),
      ],
      [
        'mysql2: a duplicate key',
        () => mysqlError("Duplicate entry 'x' for key 'uq'", 'ER_DUP_ENTRY', 1062, '23000'),
      ],
      [
        'mysql2: a lock wait timeout',
        () => mysqlError('Lock wait timeout exceeded', 'ER_LOCK_WAIT_TIMEOUT', 1205, 'HY000'),
      ],
      ['mssql: a unique violation', () => mssqlError('Violation of UNIQUE KEY constraint', 2627)],
      [
        'mssql: a statement timeout (RequestError ETIMEOUT)',
        () => new mssql.RequestError('Timeout: Request failed to complete in 15000ms', 'ETIMEOUT'),
      ],
      [
        'a SQLite constraint',
        () =>
          Object.assign(new Error('UNIQUE constraint failed: t.email'), { code: 'SQLITE_CONSTRAINT_UNIQUE' }),
      ],
      [
        'a QueryFailedError of a missing table',
        () => new QueryFailedError('SELECT', [], new Error('no such table: t')),
      ],
      ['null', () => null],
      ['a string', () => 'ECONNREFUSED'],
    ])('should not take %s for an unavailable database', (_label, make) => {
      expect(isDatabaseUnavailableError(make())).toBe(false);
    });

    it('should survive a cycle of causes', () => {
      const a = new Error('a') as Error & { cause?: unknown };
      const b = new Error('b', { cause: a });
      a.cause = b;
      expect(isDatabaseUnavailableError(a)).toBe(false);
    });

    it('should describe a connection failure for the outage log line', () => {
      expect(describeDatabaseError(socketError('ECONNREFUSED'))).toEqual({
        dialect: undefined,
        code: 'ECONNREFUSED',
        message: 'connect ECONNREFUSED 127.0.0.1:5432',
      });
      expect(describeDatabaseError(new Error('Connection terminated unexpectedly'))).toEqual({
        dialect: undefined,
        code: undefined,
        message: 'Connection terminated unexpectedly',
      });
      expect(describeDatabaseError(pgError('the database system is starting up', '57P03'))).toMatchObject({
        dialect: 'postgres',
        code: '57P03',
      });
    });
  });
});
