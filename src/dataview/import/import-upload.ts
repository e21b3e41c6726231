import type { Multipart, MultipartFile } from '@fastify/multipart';
import { AppError, ValidationError } from '../../common/errors/app-error';
import type { ImportJobInput } from './import-input';

export const XLSX_TYPE = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';

/** What an import body may be (issue 34 #14: anything else is 415, naming these). */
const ACCEPTED_TYPES = ['multipart/form-data', 'text/csv', XLSX_TYPE];

/** The options of an import, each a query parameter or a form field of a multipart body (D53). */
export const OPTION_NAMES = ['mode', 'key', 'dryRun', 'onError', 'mapping'] as const;

export type ImportOptions = Omit<ImportJobInput, 'entityCode' | 'fileId' | 'format'>;

function invalid(field: string, error: string): ValidationError {
  return new ValidationError('Validation failed', [{ field, error }]);
}

function flag(name: string, value: string | undefined): boolean {
  if (value === undefined || value === '' || value === 'false') return false;
  if (value === 'true') return true;
  throw invalid(name, 'must be true or false');
}

/** The options of an import, from the query string and the form fields together (see importOptionsOf). */
export function importOptions(query: Record<string, string | undefined>): ImportOptions {
  const mode = query.mode ?? 'create';
  if (mode !== 'create' && mode !== 'upsert') throw invalid('mode', 'must be create or upsert');
  const onError = query.onError ?? 'abort';
  if (onError !== 'abort' && onError !== 'skip') throw invalid('onError', 'must be abort or skip');
  let mapping: Record<string, string | null> = {};
  if (query.mapping !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(query.mapping);
    } catch {
      parsed = undefined;
    }
    if (
      !parsed ||
      typeof parsed !== 'object' ||
      Array.isArray(parsed) ||
      !Object.values(parsed).every((v) => v === null || typeof v === 'string')
    )
      throw invalid('mapping', 'must be a JSON object of column → field code (or null)');
    mapping = parsed as Record<string, string | null>;
  }
  if (mode === 'upsert' && !query.key) throw invalid('key', 'is required for upsert');
  return {
    mode,
    ...(mode === 'upsert' ? { key: query.key } : {}),
    dryRun: flag('dryRun', query.dryRun),
    onError,
    mapping,
  };
}

/**
 * The options of a multipart import: the query parameters and the form fields, wherever the
 * fields stand (before or after the file). An option given both ways must be given the same:
 * two different values are 400, never one silently preferred.
 */
export function importOptionsOf(
  query: Record<string, string | undefined>,
  form: Record<string, string>,
): ImportOptions {
  const merged: Record<string, string | undefined> = { ...query };
  for (const [name, value] of Object.entries(form)) {
    if (query[name] !== undefined && query[name] !== value)
      throw invalid(name, 'is given twice with different values (a query parameter and a form field)');
    merged[name] = value;
  }
  return importOptions(merged);
}

export function badMultipart(reason: string): ValidationError {
  return invalid('file', reason);
}

/** 415 for a body that is no import file, naming the types that are (D18). */
export function unsupportedImportType(): AppError {
  return new AppError(
    'UNSUPPORTED_MEDIA_TYPE',
    `Unsupported content type: send the file as ${ACCEPTED_TYPES.join(', ')}`,
    [{ field: 'content-type', error: `must be one of ${ACCEPTED_TYPES.join(', ')}` }],
  );
}

/** @fastify/multipart's errors: 413 PAYLOAD_TOO_LARGE beyond IMPORT_MAX_BYTES, else 400 naming file. */
export function multipartError(err: unknown): AppError {
  switch ((err as { code?: unknown } | null)?.code) {
    case 'FST_REQ_FILE_TOO_LARGE':
      return new AppError('PAYLOAD_TOO_LARGE', 'The file is larger than IMPORT_MAX_BYTES');
    case 'FST_FILES_LIMIT':
      return badMultipart('send one file only, as the part named file');
    case 'FST_PARTS_LIMIT':
    case 'FST_FIELDS_LIMIT':
      return badMultipart('too many form fields');
    default:
      return badMultipart('the multipart body cannot be read');
  }
}

/**
 * Reads the parts of a multipart body one by one, fields into `form` (each an option, once, and
 * short), up to the `file` part (returned) or to the end (undefined). Read again after the file
 * has been consumed, it collects the fields that follow it; a second file is 400.
 */
export async function nextFile(
  parts: AsyncIterator<Multipart>,
  form: Record<string, string>,
): Promise<MultipartFile | undefined> {
  for (;;) {
    let next: IteratorResult<Multipart>;
    try {
      next = await parts.next();
    } catch (err) {
      throw multipartError(err);
    }
    if (next.done) return undefined;
    const part = next.value;
    if (part.type === 'file') {
      if (part.fieldname === 'file') return part;
      part.file.resume();
      throw badMultipart('send the file as the multipart part named file');
    }
    const name = part.fieldname;
    if (!(OPTION_NAMES as readonly string[]).includes(name))
      throw invalid(name, `is not an import option (${OPTION_NAMES.join(', ')})`);
    if (name in form) throw invalid(name, 'is given twice');
    if (part.valueTruncated || typeof part.value !== 'string') throw invalid(name, 'is too long');
    form[name] = part.value;
  }
}
