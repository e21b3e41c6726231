import { AppError, FieldError, ValidationError } from '../common/errors/app-error';
import { httpStatusOf } from '../common/errors/error-codes';
import { expectedToken, LAST_MODIFIED_KEY } from '../records/concurrency-token';
import type { BulkInput, BulkOperation, BulkResult, BulkRowInput } from '../records/use-cases/bulk-records';

const OPERATIONS: readonly BulkOperation[] = ['create', 'update', 'delete'];
const KEYS = new Set(['operation', 'records', 'ids', 'cascade', 'allOrNone']);

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A bulk row's id (issue 34 #5): an integer, as a JSON number or its digits, or the reason it is not
 * one (an object such as `{"$gt": 0}`, an array, a float, a string of non-digits) — a 400 naming the
 * field, never a row that "is not found" as NaN. An integer outside the key's range stays a number:
 * it names no record, so its row answers 404 as the single route would (D45).
 */
export function bulkRowId(raw: unknown): { id: number } | { error: string } {
  if (typeof raw === 'number' && Number.isInteger(raw)) return { id: raw };
  if (typeof raw === 'string' && /^\d+$/.test(raw)) return { id: Number(raw) };
  return { error: 'must be a record id (an integer, or its digits as a string)' };
}

export const tooManyRows = (count: number, max: number): AppError =>
  new AppError('PAYLOAD_TOO_LARGE', `A bulk request takes at most ${max} rows; this one has ${count}`, {
    maxRows: max,
    rows: count,
  });

/**
 * The body of `POST /api/v1/{entity_code}/bulk` (D51) as the bulk use case's input. The shape is
 * checked for the whole request (400 naming every problem; 413 above `maxRows`); what the single
 * route would decide about a row (its values, its token, its id) is left to that row.
 */
export function parseBulkBody(body: unknown, maxRows: number): BulkInput {
  if (!isObject(body))
    throw new ValidationError('Validation failed', [{ field: 'body', error: 'must be an object' }]);
  const errors: FieldError[] = [];
  for (const key of Object.keys(body))
    if (!KEYS.has(key)) errors.push({ field: key, error: 'is not a bulk request option' });
  const operation = body.operation as BulkOperation;
  if (!OPERATIONS.includes(operation))
    errors.push({ field: 'operation', error: 'must be create, update or delete' });
  for (const flag of ['cascade', 'allOrNone'] as const)
    if (body[flag] !== undefined && typeof body[flag] !== 'boolean')
      errors.push({ field: flag, error: 'must be true or false' });
  if (errors.length > 0) throw new ValidationError('Validation failed', errors);

  const listKey = operation === 'delete' ? 'ids' : 'records';
  const otherKey = operation === 'delete' ? 'records' : 'ids';
  if (body[otherKey] !== undefined)
    errors.push({ field: otherKey, error: `is not taken by ${operation} (it takes ${listKey})` });
  if (body.cascade !== undefined && operation !== 'delete')
    errors.push({ field: 'cascade', error: 'is taken by delete only' });
  const list = body[listKey];
  if (!Array.isArray(list)) errors.push({ field: listKey, error: 'must be an array' });
  else if (list.length === 0) errors.push({ field: listKey, error: 'must name at least one row' });
  if (errors.length > 0) throw new ValidationError('Validation failed', errors);
  const items = list as unknown[];
  if (items.length > maxRows) throw tooManyRows(items.length, maxRows);

  const rows: BulkRowInput[] = [];
  for (const [i, item] of items.entries()) {
    if (operation === 'delete') {
      const read = bulkRowId(item);
      if ('error' in read) errors.push({ field: `ids[${i}]`, error: read.error });
      rows.push({ id: 'id' in read ? read.id : NaN });
      continue;
    }
    if (!isObject(item)) {
      errors.push({ field: `records[${i}]`, error: 'must be an object' });
      continue;
    }
    if (operation === 'create') {
      rows.push({ body: item });
      continue;
    }
    const { id, ...fields } = item;
    if (id === undefined || id === null) {
      errors.push({ field: `records[${i}].id`, error: 'is required' });
      continue;
    }
    const read = bulkRowId(id);
    if ('error' in read) {
      errors.push({ field: `records[${i}].id`, error: read.error });
      continue;
    }
    rows.push({
      id: read.id,
      body: fields,
      expected: expectedToken(fields[LAST_MODIFIED_KEY], undefined),
    });
  }
  // The same record twice in one request: which save should win is not the server's guess.
  const seen = new Set<number>();
  for (const [i, row] of rows.entries()) {
    if (row.id === undefined || !Number.isFinite(row.id)) continue;
    if (seen.has(row.id))
      errors.push({
        field: operation === 'delete' ? `ids[${i}]` : `records[${i}].id`,
        error: 'names a record an earlier row names',
      });
    seen.add(row.id);
  }
  if (errors.length > 0) throw new ValidationError('Validation failed', errors);
  return {
    operation,
    rows,
    cascade: body.cascade === true,
    allOrNone: body.allOrNone === true,
  };
}

/** A row's answer in D51's shape. */
export interface BulkRowAnswer {
  index: number;
  id: number | null;
  status: number;
  error?: { code: string; message: string; details: unknown };
  lastModified?: string;
  /** A workflow action's row (D52): the instance it started. */
  instanceId?: number;
}

export interface BulkAnswer {
  results: BulkRowAnswer[];
  succeeded: number;
  failed: number;
}

/**
 * The bulk use case's result as D51 answers it: 200 with a result per row, each carrying the status
 * and error the single route would have answered; or, when all-or-none rolled back, the first failing
 * row's error (its code, so its status) with every row's result in `details.results`.
 */
export function bulkAnswer(result: BulkResult): BulkAnswer {
  const created = result.operation === 'create';
  const success = created ? 201 : result.operation === 'workflow' ? 202 : 200;
  const results = result.rows.map((row): BulkRowAnswer => {
    if (!row.ok)
      return {
        index: row.index,
        id: row.id,
        status: httpStatusOf(row.error.code),
        error: { code: row.error.code, message: row.error.message, details: row.error.details ?? null },
      };
    // Rolled back: the row would have succeeded, but nothing was written, so there is no new id or token.
    if (!result.committed) return { index: row.index, id: created ? null : row.id, status: success };
    return {
      index: row.index,
      id: row.id,
      status: success,
      ...(row.lastModified ? { lastModified: row.lastModified } : {}),
      ...(row.instanceId !== undefined ? { instanceId: row.instanceId } : {}),
    };
  });
  if (!result.committed) {
    const first = result.rows.find((r) => !r.ok);
    const code = first && !first.ok ? first.error.code : 'VALIDATION_ERROR';
    throw new AppError(
      code,
      `${result.failed} of ${result.rows.length} rows failed; nothing was written (allOrNone)`,
      { results },
    );
  }
  return { results, succeeded: result.succeeded, failed: result.failed };
}
