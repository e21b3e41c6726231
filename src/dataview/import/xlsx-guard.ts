import { createRequire } from 'node:module';
import type { Duplex, Readable } from 'node:stream';
import { Transform } from 'node:stream';
import { XmlBoundError, XmlMeter } from './xml-meter';

/**
 * The bounds of an XLSX import (issue 34 #1): a workbook is scanned against them before exceljs
 * reads it, so a zip bomb fails the import instead of the process.
 */
export interface XlsxBounds {
  /** IMPORT_MAX_INFLATED_BYTES: all entries together, inflated. */
  maxInflatedBytes: number;
  /** IMPORT_MAX_ZIP_RATIO: inflated / compressed bytes of one entry, once it passed RATIO_FROM bytes. */
  maxRatio: number;
  /** IMPORT_MAX_CELL_CHARS: a cell's text; its XML may take XML_BYTES_PER_CHAR times as many bytes. */
  maxCellChars: number;
  /** IMPORT_MAX_ROW_CHARS: a row's text; its XML may take XML_BYTES_PER_CHAR times as many bytes. */
  maxRowChars: number;
  /** IMPORT_MAX_SHARED_STRINGS: `<si>` entries of the shared-string table. */
  maxSharedStrings: number;
  /** IMPORT_MAX_SHARED_STRINGS_BYTES: the shared-string table (and any other part held whole), inflated. */
  maxSharedStringsBytes: number;
}

/** Below this many inflated bytes an entry may be as repetitive as it likes (a small part compresses a lot). */
export const RATIO_FROM = 1024 * 1024;
/**
 * XML bytes allowed per character of text: the longest escape of a character (`&#x10FFFF;`,
 * OOXML's `_x0001_`) and a rich-text run's formatting fit in it several times over.
 */
export const XML_BYTES_PER_CHAR = 16;

/**
 * The parts exceljs' WorkbookReader parses as XML (its switch on the entry path, same patterns):
 * a worksheet is streamed row by row, the others are held whole.
 */
function partOf(path: string): 'sheet' | 'held' | 'other' {
  if (/xl\/worksheets\/sheet\d+[.]xml/.test(path)) return 'sheet';
  if (
    path === 'xl/_rels/workbook.xml.rels' ||
    path === 'xl/workbook.xml' ||
    path === 'xl/sharedStrings.xml' ||
    path === 'xl/styles.xml' ||
    /xl\/worksheets\/_rels\/sheet\d+[.]xml.rels/.test(path)
  )
    return 'held';
  return 'other';
}

/** A bound the file broke, as the import's error says it. */
export class XlsxBoundError extends Error {}

interface ZipEntry extends Readable {
  path: string;
  vars: { flags: number; compressedSize: number };
}

/**
 * The zip parser exceljs itself reads with (unzipper's streaming Parse, loaded from exceljs' own
 * dependencies): the scan sees exactly the local entries the reader will see, not a central
 * directory that could tell another story.
 */
function zipParser(): Duplex & AsyncIterable<ZipEntry> {
  // exceljs' own unzipper (untyped), resolved from exceljs' location: the very module it loads.
  const unzipper = createRequire(require.resolve('exceljs'))('unzipper') as {
    Parse(options: { forceStream: boolean }): Duplex & AsyncIterable<ZipEntry>;
  };
  return unzipper.Parse({ forceStream: true });
}

export interface XlsxScan {
  /** Inflated bytes of every entry. */
  inflated: number;
  entries: Array<{ path: string; inflated: number }>;
  sharedStrings: number;
}

/**
 * Reads a workbook through the zip parser, inflating every entry through counters (constant
 * memory, nothing kept): rejects with an XlsxBoundError at the first bound broken, with another
 * error when the zip cannot be read. The source is consumed (and destroyed on failure).
 */
export async function scanXlsx(source: Readable, bounds: XlsxBounds): Promise<XlsxScan> {
  let consumed = 0;
  let lastChunk = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      consumed += chunk.length;
      lastChunk = chunk.length;
      done(null, chunk);
    },
  });
  const zip = zipParser();
  // The parser reports a broken deflate stream or a truncated zip on itself, not on the entry.
  let fail: (err: unknown) => void = () => undefined;
  const failed = new Promise<never>((_, reject) => (fail = reject));
  failed.catch(() => undefined);
  for (const s of [source, counter, zip]) s.on('error', (err) => fail(err));
  source.pipe(counter).pipe(zip);
  const scan: XlsxScan = { inflated: 0, entries: [], sharedStrings: 0 };
  try {
    for await (const entry of zip) {
      // Compressed bytes of the entry: its header's size, or (sizes in a trailing data descriptor)
      // what the parser took in since the entry began, a chunk of read-ahead included.
      const known = !(entry.vars.flags & 0x08) || entry.vars.compressedSize > 0;
      const start = consumed - lastChunk;
      const compressed = () => (known ? entry.vars.compressedSize : consumed - start);
      await Promise.race([measure(entry, bounds, scan, compressed), failed]);
    }
    return scan;
  } catch (err) {
    source.destroy();
    zip.destroy();
    if (err instanceof XmlBoundError) throw new XlsxBoundError(err.message);
    throw err;
  }
}

async function measure(
  entry: ZipEntry,
  bounds: XlsxBounds,
  scan: XlsxScan,
  compressed: () => number,
): Promise<void> {
  const part = partOf(entry.path);
  const meter =
    part === 'other'
      ? undefined
      : new XmlMeter({
          maxRunBytes: bounds.maxCellChars * XML_BYTES_PER_CHAR,
          maxRowBytes: bounds.maxRowChars * XML_BYTES_PER_CHAR,
        });
  let inflated = 0;
  for await (const chunk of entry as AsyncIterable<Buffer>) {
    inflated += chunk.length;
    scan.inflated += chunk.length;
    if (scan.inflated > bounds.maxInflatedBytes)
      throw new XlsxBoundError(
        `it inflates to more than ${bounds.maxInflatedBytes} bytes (IMPORT_MAX_INFLATED_BYTES)`,
      );
    if (inflated > RATIO_FROM && inflated > bounds.maxRatio * Math.max(1, compressed()))
      throw new XlsxBoundError(
        `${entry.path} inflates more than ${bounds.maxRatio} times its compressed size (IMPORT_MAX_ZIP_RATIO)`,
      );
    if (part === 'held' && inflated > bounds.maxSharedStringsBytes)
      throw new XlsxBoundError(
        `${entry.path} inflates to more than ${bounds.maxSharedStringsBytes} bytes (IMPORT_MAX_SHARED_STRINGS_BYTES)`,
      );
    if (meter) {
      try {
        meter.write(chunk);
      } catch (err) {
        if (!(err instanceof XmlBoundError)) throw err;
        throw new XlsxBoundError(`${entry.path} has ${err.message}${hint(err.message)}`);
      }
      if (meter.sharedStrings > bounds.maxSharedStrings)
        throw new XlsxBoundError(
          `${entry.path} has more than ${bounds.maxSharedStrings} shared strings (IMPORT_MAX_SHARED_STRINGS)`,
        );
    }
  }
  scan.entries.push({ path: entry.path, inflated });
  if (meter) scan.sharedStrings += meter.sharedStrings;
}

/** Which variable a bound of the XML meter comes from. */
function hint(message: string): string {
  if (message.startsWith('a row')) return ' (IMPORT_MAX_ROW_CHARS)';
  if (message.startsWith('a DTD')) return '';
  return ' (IMPORT_MAX_CELL_CHARS)';
}
