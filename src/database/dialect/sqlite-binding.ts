import type { DataSource } from 'typeorm';

type Params = Record<string, unknown>;
interface EscapingDriver {
  escapeQueryWithParameters(sql: string, parameters: Params, nativeParameters: Params): [string, unknown[]];
}

/**
 * TypeORM's SQLite drivers write a number parameter into the statement's text instead of binding
 * it, so every record id, amount or timestamp makes a statement text of its own: better-sqlite3
 * prepares each one again and they flush the driver's statement cache (a FIFO of 100), so even
 * the statements that never change are prepared over and over (an import of 10,000 rows: ~11 % of
 * the process's CPU in `prepare`). Here safe integers are bound as BigInt — SQLite INTEGER, the
 * type the literal had, so comparisons and column affinity are what they were — and every other
 * number is left as TypeORM writes it (a JavaScript number would bind as REAL: `'5.0'` in a TEXT
 * column). A subclass would be the cleaner hook, but TypeORM picks its driver class itself.
 */
export function bindSqliteIntegers(ds: DataSource): DataSource {
  if (ds.options.type !== 'better-sqlite3') return ds;
  const driver = ds.driver as unknown as EscapingDriver;
  const escape = driver.escapeQueryWithParameters.bind(driver);
  driver.escapeQueryWithParameters = (sql, parameters, nativeParameters) =>
    escape(sql, parameters && integersBound(parameters), nativeParameters);
  return ds;
}

/** The parameters with each safe integer (top level or in an IN list) as a BigInt. */
export function integersBound(parameters: Params): Params {
  let out: Params | undefined;
  for (const key of Object.keys(parameters)) {
    const value = parameters[key];
    const bound =
      Array.isArray(value) && value.some(Number.isSafeInteger) ? value.map(asInteger) : asInteger(value);
    if (bound === value) continue;
    out ??= { ...parameters };
    out[key] = bound;
  }
  return out ?? parameters;
}

function asInteger(value: unknown): unknown {
  return typeof value === 'number' && Number.isSafeInteger(value) ? BigInt(value) : value;
}
