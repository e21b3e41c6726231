/**
 * Imports (D53) through the client: `client.imports.upload(entity, file, options)` sends a CSV
 * string as the `text/csv` body (UTF-8) and a Blob, File, ArrayBuffer or byte array (Node's Buffer
 * too) as the multipart part `file`; the options are query parameters, as the route takes them.
 */
import type { Client } from 'openapi-fetch';
import type { paths } from './schema';
import { answered, dataOf } from './outcome';
import type { QueryOf, SuccessData } from './types';

type UploadOp = paths['/api/v1/{entity_code}/imports']['post'];
type StatusOp = paths['/api/v1/imports/{importId}']['get'];

/** An import job (D53) as the service answers it: status, counts, the first errors, the error file. */
export type ImportJob = SuccessData<StatusOp>;
/** The import as the upload answers it (202): the same job, queued. */
export type ImportStarted = SuccessData<UploadOp>;
/** An import's id, as the document types it (the client follows the document if it changes). */
export type ImportId = StatusOp['parameters']['path']['importId'];

/** A file to import: a CSV string, or the bytes of a CSV or XLSX file. */
export type ImportFile = Blob | ArrayBuffer | ArrayBufferView | string;

/** The route's query parameters, with `mapping` also as an object (sent as JSON), and how to name the file. */
export type ImportOptions = Omit<QueryOf<UploadOp>, 'mapping'> & {
  /** Column → field code (null ignores the column); an object is sent as its JSON. */
  mapping?: Record<string, string | null> | string;
  /** Bytes only: the part's file name (a File's own name by default); a `.xlsx` name is a workbook. */
  filename?: string;
  /** Bytes only: the file's format; by default XLSX when the name, the type or the bytes (a ZIP) say so, else CSV. */
  format?: 'csv' | 'xlsx';
};

export interface ImportWaitOptions {
  /** Milliseconds between two reads of the status; 500. */
  intervalMs?: number;
  /** Gives up (throws) after this many milliseconds; 5 minutes. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface ImportsApi {
  /** POST /api/v1/{entity}/imports: starts the import and answers the queued job (202); throws ApiError. */
  upload(entity: string, file: ImportFile, options?: ImportOptions): Promise<ImportStarted>;
  /** GET /api/v1/imports/{id}. */
  status(id: ImportId): Promise<ImportJob>;
  /** POST /api/v1/imports/{id}/cancel. */
  cancel(id: ImportId): Promise<ImportJob>;
  /** Reads the status until the job is COMPLETED, FAILED or CANCELLED, and answers it. */
  wait(id: ImportId, options?: ImportWaitOptions): Promise<ImportJob>;
}

export const XLSX_TYPE = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';
const FINISHED: ReadonlySet<string> = new Set(['COMPLETED', 'FAILED', 'CANCELLED']);

/** The first bytes of a ZIP archive, which an XLSX workbook is. */
async function looksLikeZip(blob: Blob): Promise<boolean> {
  const head = new Uint8Array(await blob.slice(0, 4).arrayBuffer());
  return head[0] === 0x50 && head[1] === 0x4b && head[2] === 0x03 && head[3] === 0x04;
}

/** The multipart body of a binary file: one part named `file`, with a name and type that agree on the format. */
async function multipart(file: Exclude<ImportFile, string>, options: ImportOptions): Promise<FormData> {
  // A copy of the bytes: a view may sit on a SharedArrayBuffer, which a Blob does not take.
  const blob =
    file instanceof Blob
      ? file
      : new Blob([
          ArrayBuffer.isView(file)
            ? new Uint8Array(file.buffer, file.byteOffset, file.byteLength).slice()
            : file,
        ]);
  const ownName = typeof File !== 'undefined' && file instanceof File ? file.name : undefined;
  const name = options.filename ?? ownName;
  const xlsx =
    options.format !== undefined
      ? options.format === 'xlsx'
      : blob.type.startsWith(XLSX_TYPE) || /\.xlsx$/i.test(name ?? '') || (await looksLikeZip(blob));
  const type = xlsx ? XLSX_TYPE : 'text/csv';
  const form = new FormData();
  form.append(
    'file',
    blob.type === type ? blob : new Blob([blob], { type }),
    name ?? (xlsx ? 'import.xlsx' : 'import.csv'),
  );
  return form;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });

export function importsApi(api: Client<paths>): ImportsApi {
  const status = async (id: ImportId) =>
    dataOf(await answered(api.GET('/api/v1/imports/{importId}', { params: { path: { importId: id } } })));
  return {
    async upload(entity, file, options = {}) {
      const { mapping, filename: _name, format: _format, ...rest } = options;
      const query: QueryOf<UploadOp> = {
        ...rest,
        ...(mapping === undefined
          ? {}
          : { mapping: typeof mapping === 'string' ? mapping : JSON.stringify(mapping) }),
      };
      const text = typeof file === 'string';
      const outcome = await answered(
        api.POST('/api/v1/{entity_code}/imports', {
          params: { path: { entity_code: entity }, query },
          // The body passes through the client's serializer as it is (body.ts): the text, or FormData
          // with fetch's own multipart content type and boundary.
          body: (text ? file : await multipart(file, options)) as never,
          ...(text ? { headers: { 'content-type': 'text/csv; charset=utf-8' } } : {}),
        }),
      );
      return dataOf(outcome);
    },
    status,
    async cancel(id) {
      return dataOf(
        await answered(api.POST('/api/v1/imports/{importId}/cancel', { params: { path: { importId: id } } })),
      );
    },
    async wait(id, options = {}) {
      const deadline = Date.now() + (options.timeoutMs ?? 300_000);
      for (;;) {
        const job = await status(id);
        if (FINISHED.has(job.status)) return job;
        if (options.signal?.aborted) throw options.signal.reason ?? new Error('aborted');
        if (Date.now() >= deadline)
          throw new Error(
            `import ${String(id)} is still ${job.status} after ${options.timeoutMs ?? 300_000} ms`,
          );
        await sleep(options.intervalMs ?? 500, options.signal);
      }
    },
  };
}
