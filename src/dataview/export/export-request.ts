import { FieldError, ValidationError } from '../../common/errors/app-error';
import { GridRequest, parseGridRequest } from '../grid/grid-request';
import { EXPORT_FORMATS, ExportFormat } from './export-model';

/** The body of `POST /api/v1/dataviews/{code}/export`. */
export interface ExportRequest {
  format: ExportFormat;
  /** filters, sort and search as the data route takes them (no paging, no groups). */
  grid: GridRequest;
}

const KEYS = new Set(['format', 'filters', 'sort', 'search']);

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Checks the body's shape: `format` one of csv, excel, pdf; `filters` and `sort` arrays of the data
 * route's shape (checked by the same parser, so the same labels: `filters[0].operator`); `search`
 * a text. 400 VALIDATION_ERROR listing every problem.
 */
export function parseExportRequest(body: unknown): ExportRequest {
  const errors: FieldError[] = [];
  const b = isObject(body) ? body : {};
  if (!isObject(body)) errors.push({ field: 'body', error: 'must be a JSON object' });
  for (const key of Object.keys(b)) if (!KEYS.has(key)) errors.push({ field: key, error: 'unknown key' });
  if (typeof b.format !== 'string' || !(EXPORT_FORMATS as readonly string[]).includes(b.format))
    errors.push({ field: 'format', error: `must be one of ${EXPORT_FORMATS.join(', ')}` });
  const query: Record<string, string> = {};
  for (const name of ['filters', 'sort'] as const) {
    const v = b[name];
    if (v === undefined || v === null) continue;
    if (!Array.isArray(v)) errors.push({ field: name, error: 'must be an array' });
    else query[name] = JSON.stringify(v);
  }
  if (b.search !== undefined && b.search !== null) {
    if (typeof b.search !== 'string') errors.push({ field: 'search', error: 'must be a text' });
    else query.search = b.search;
  }
  let grid: GridRequest = { filters: [] };
  try {
    grid = parseGridRequest(query);
  } catch (err) {
    if (!(err instanceof ValidationError) || !Array.isArray(err.details)) throw err;
    errors.push(...(err.details as FieldError[]));
  }
  if (errors.length > 0) throw new ValidationError('Invalid export request', errors);
  return { format: b.format as ExportFormat, grid };
}
