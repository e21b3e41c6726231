import { stringify } from 'csv-stringify';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ExportInput, ExportRenderer, neutralized, typedCell } from './export-model';

/**
 * Fields csv-stringify must quote besides those holding a comma, a quote or CRLF: a lone CR or LF
 * (else a reader starts a new row inside the cell, issue 21 #2) and `;` (the separator of the
 * locales that split CSV on it, where an unquoted `;` would start a new cell).
 */
export const QUOTED_MATCH = /[\r\n;]/;

/**
 * CSV (RFC 4180, UTF-8, header row of the column names) streamed through csv-stringify: one batch
 * in memory at a time. Dates as YYYY-MM-DD, numbers untouched, text neutralized (D48).
 */
export class CsvRenderer implements ExportRenderer {
  readonly format = 'csv' as const;
  readonly extension = 'csv';
  readonly contentType = 'text/csv; charset=utf-8';

  async render(input: ExportInput, out: Writable): Promise<void> {
    const { columns, batches, written } = input;
    async function* records(): AsyncGenerator<string[]> {
      yield columns.map((c) => neutralized(c.header));
      for await (const batch of batches)
        for (const row of batch) {
          written.rows++;
          yield columns.map((c) => {
            const v = typedCell(c, row[c.fieldCode]);
            if (v === null) return '';
            if (v instanceof Date) return v.toISOString().slice(0, 10);
            return String(v);
          });
        }
    }
    await pipeline(
      Readable.from(records()),
      stringify({ record_delimiter: 'windows', quoted_match: QUOTED_MATCH }),
      out,
    );
  }
}
