import { parse } from 'csv-parse';
import type ExcelJSModule from 'exceljs';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { AppError, ValidationError } from '../../common/errors/app-error';
import { lazyModule } from '../../common/lazy-module';
import { startsFormula } from '../export/export-model';
import { scanXlsx, type XlsxBounds, XlsxBoundError } from './xlsx-guard';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on the first XLSX import
const exceljs = lazyModule<typeof ExcelJSModule>(() => require('exceljs'));

export type ImportFormat = 'csv' | 'xlsx';

/** A cell as read: text, or what a workbook typed (number, boolean, date). */
export type Cell = string | number | boolean | Date | null;

/** One line of the file: its number in the file (the header is row 1) and its cells. */
export interface FileRow {
  row: number;
  cells: Cell[];
}

/** The bounds of what an import file may hold (issue 34 #1); the variables' defaults until configured. */
export type ImportFileBounds = XlsxBounds;

export const DEFAULT_FILE_BOUNDS: ImportFileBounds = {
  maxInflatedBytes: 268_435_456,
  maxRatio: 100,
  maxCellChars: 32_767,
  maxRowChars: 1_048_576,
  maxSharedStrings: 2_000_000,
  maxSharedStringsBytes: 104_857_600,
};

function badFile(reason: string): ValidationError {
  return new ValidationError(`The file cannot be read: ${reason}`, [{ field: 'file', error: reason }]);
}

/** A cell or row of text beyond its bound: the file fails, naming the line and the variable. */
function checkText(row: number, cells: Cell[], bounds: ImportFileBounds): void {
  let chars = 0;
  for (const cell of cells) {
    if (typeof cell !== 'string') continue;
    if (cell.length > bounds.maxCellChars)
      throw badFile(
        `row ${row} has a cell longer than ${bounds.maxCellChars} characters (IMPORT_MAX_CELL_CHARS)`,
      );
    chars += cell.length;
  }
  if (chars > bounds.maxRowChars)
    throw badFile(`row ${row} is longer than ${bounds.maxRowChars} characters (IMPORT_MAX_ROW_CHARS)`);
}

/**
 * Rows of a CSV file, streamed (csv-parse): a BOM is dropped, a ragged row fails the file. The
 * parser holds at most IMPORT_MAX_ROW_CHARS characters of a record (max_record_size).
 */
async function* csvRows(body: Readable, bounds: ImportFileBounds): AsyncGenerator<FileRow> {
  const parser = body.pipe(
    parse({
      bom: true,
      skip_empty_lines: true,
      relax_column_count: false,
      max_record_size: bounds.maxRowChars,
    }),
  );
  let row = 0;
  try {
    for await (const record of parser as AsyncIterable<string[]>) {
      row++;
      checkText(row, record, bounds);
      yield { row, cells: record };
    }
  } catch (err) {
    if (err instanceof AppError) throw err;
    const csvError = err as { code?: unknown; records?: unknown };
    if (csvError.code === 'CSV_MAX_RECORD_SIZE')
      throw badFile(
        `row ${Number(csvError.records ?? row) + 1} is longer than ${bounds.maxRowChars} characters (IMPORT_MAX_ROW_CHARS)`,
      );
    const message = err instanceof Error ? err.message : 'unreadable CSV';
    throw badFile(message.replace(/\s+/g, ' ').slice(0, 200));
  } finally {
    body.destroy();
  }
}

function cellOf(value: unknown): Cell {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return value;
  if (value instanceof Date) return value;
  const v = value as {
    text?: unknown;
    richText?: Array<{ text: string }>;
    result?: unknown;
    error?: unknown;
  };
  if (Array.isArray(v.richText)) return v.richText.map((r) => r.text).join('');
  if (typeof v.text === 'string') return v.text;
  if ('result' in v) return cellOf(v.result);
  return null;
}

function isBold(r: ExcelJSModule.Row): boolean {
  let bold = false;
  r.eachCell((cell) => {
    if (cell.font?.bold) bold = true;
  });
  return bold;
}

/**
 * Rows of the first worksheet of an XLSX file, streamed (exceljs' WorkbookReader). The file is
 * first copied to a private temporary file and scanned there against the bounds (xlsx-guard.ts):
 * exceljs reads only a workbook that passed, from that copy.
 */
async function* xlsxRows(body: Readable, bounds: ImportFileBounds): AsyncGenerator<FileRow> {
  let dir: string | undefined;
  try {
    dir = await mkdtemp(join(tmpdir(), 'import-xlsx-'));
    const copy = join(dir, 'file.xlsx');
    await pipeline(body, createWriteStream(copy));
    try {
      await scanXlsx(createReadStream(copy), bounds);
    } catch (err) {
      if (err instanceof XlsxBoundError) throw badFile(err.message);
      throw badFile('not an XLSX workbook');
    }
    yield* workbookRows(createReadStream(copy), bounds);
  } finally {
    body.destroy();
    if (dir) await rm(dir, { recursive: true, force: true });
  }
}

async function* workbookRows(body: Readable, bounds: ImportFileBounds): AsyncGenerator<FileRow> {
  const reader = new (exceljs().stream.xlsx.WorkbookReader)(body, {
    sharedStrings: 'cache',
    hyperlinks: 'ignore',
    styles: 'cache',
    worksheets: 'emit',
  });
  try {
    for await (const sheet of reader) {
      for await (const r of sheet as AsyncIterable<ExcelJSModule.Row>) {
        const cells = (r.values as unknown[]).slice(1).map(cellOf);
        // A row without a value (a blank or formatted-only row) is skipped, as an empty CSV line.
        if (cells.every((c) => c === null || c === '')) continue;
        // The export's totals row (D48 exports write it bold, after the data) is not data.
        if (r.number > 1 && isBold(r)) continue;
        checkText(r.number, cells, bounds);
        yield { row: r.number, cells };
      }
      return; // the first worksheet only
    }
  } catch (err) {
    if (err instanceof AppError) throw err;
    throw badFile('not an XLSX workbook');
  } finally {
    body.destroy();
  }
}

/** The rows of an import file, as they come, within `bounds` (IMPORT_MAX_*). */
export function fileRows(
  format: ImportFormat,
  body: Readable,
  bounds: ImportFileBounds = DEFAULT_FILE_BOUNDS,
): AsyncGenerator<FileRow> {
  return format === 'csv' ? csvRows(body, bounds) : xlsxRows(body, bounds);
}

/** A cell as text with the export's formula prefix (D48) taken off again, line by line. */
export function unprefixed(text: string): string {
  const parts = text.split(/(\r\n|\r|\n)/);
  for (let i = 0; i < parts.length; i += 2) {
    const part = parts[i];
    if (part.startsWith("'") && startsFormula(i === 0 ? text.slice(1) : part.slice(1)))
      parts[i] = part.slice(1);
  }
  return parts.join('');
}

/**
 * The checks of a file as it is stored, before it is queued (a stream: the file is never held
 * whole): a CSV must be UTF-8, an XLSX must start as a zip, an empty file is refused. The bytes pass
 * through unchanged; a failing check fails the stream (and the store keeps nothing).
 */
export class FileCheck extends Transform {
  private bytes = 0;
  private readonly utf8 = new TextDecoder('utf-8', { fatal: true });
  private head = Buffer.alloc(0);

  /** `truncated`: whether the source stopped at its size limit (a multipart part, IMPORT_MAX_BYTES). */
  constructor(
    private readonly format: ImportFormat,
    private readonly truncated: () => boolean = () => false,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    try {
      this.check(chunk);
      done(null, chunk);
    } catch (err) {
      done(err as Error);
    }
  }

  override _flush(done: TransformCallback): void {
    try {
      if (this.truncated())
        throw new AppError('PAYLOAD_TOO_LARGE', 'The file is larger than IMPORT_MAX_BYTES');
      if (this.bytes === 0) throw badFile('the file is empty');
      if (this.format === 'csv') this.decode(undefined);
      else if (this.head.length < 4) throw badFile('not an XLSX workbook');
      done();
    } catch (err) {
      done(err as Error);
    }
  }

  private check(chunk: Buffer): void {
    this.bytes += chunk.length;
    if (this.format === 'csv') {
      this.decode(chunk);
      return;
    }
    if (this.head.length >= 4) return;
    this.head = Buffer.concat([this.head, chunk.subarray(0, 4 - this.head.length)]);
    if (this.head.length === 4 && this.head.readUInt32LE(0) !== 0x04034b50)
      throw badFile('not an XLSX workbook');
  }

  private decode(chunk: Buffer | undefined): void {
    try {
      if (chunk) this.utf8.decode(chunk, { stream: true });
      else this.utf8.decode();
    } catch {
      throw badFile('the CSV is not UTF-8');
    }
  }
}
