import type ExcelJSModule from 'exceljs';
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { lazyModule } from '../../common/lazy-module';
import { ExportInput, ExportRenderer, neutralized, textOf, typedCell } from './export-model';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on the first XLSX export
const exceljs = lazyModule<typeof ExcelJSModule>(() => require('exceljs'));

/** Pixels per character of an Excel column width (spec: columnWidth / 7). */
const PX_PER_CHAR = 7;

/**
 * XLSX through exceljs' streaming WorkbookWriter (rows are committed as they come, so one batch is
 * in memory at a time): typed cells (numbers, dates, booleans), widths from columnWidth, a frozen
 * header row with an autofilter, the aggregates as a footer row, and an "About" sheet saying what
 * was exported, how, by whom and when. Text is neutralized (D48); numbers never are.
 */
export class XlsxRenderer implements ExportRenderer {
  readonly format = 'excel' as const;
  readonly extension = 'xlsx';
  readonly contentType = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';

  async render(input: ExportInput, out: Writable): Promise<void> {
    const { columns, meta, written } = input;
    const finished = once(out, 'finish');
    const workbook = new (exceljs().stream.xlsx.WorkbookWriter)({ stream: out, useStyles: true });
    workbook.creator = meta.exportedBy;
    workbook.created = meta.exportedAt;
    const sheet = workbook.addWorksheet('Data', { views: [{ state: 'frozen', xSplit: 0, ySplit: 1 }] });
    sheet.columns = columns.map((c) => ({
      key: c.fieldCode,
      width: c.widthPx ? Math.max(4, Math.round((c.widthPx / PX_PER_CHAR) * 10) / 10) : 16,
      ...(c.kind === 'date' ? { style: { numFmt: 'yyyy-mm-dd' } } : {}),
    }));
    const header = sheet.addRow(columns.map((c) => neutralized(c.header)));
    header.font = { bold: true };
    header.commit();
    if (columns.length > 0)
      sheet.autoFilter = { from: { row: 1, column: 1 }, to: { row: 1, column: columns.length } };

    for await (const batch of input.batches)
      for (const row of batch) {
        written.rows++;
        sheet.addRow(columns.map((c) => typedCell(c, row[c.fieldCode]))).commit();
      }

    if (input.aggregates) {
      const totals = await input.aggregates();
      const footer = sheet.addRow(
        columns.map((c) => {
          const v = totals[c.fieldCode];
          return v === undefined ? null : typedCell(c, v);
        }),
      );
      footer.font = { bold: true };
      footer.commit();
    }
    sheet.commit();

    const about = workbook.addWorksheet('About');
    about.columns = [{ width: 18 }, { width: 80 }];
    const lines: Array<[string, string | number | Date]> = [
      ['Dataview', meta.dataviewCode],
      ['Name', meta.dataviewName],
      ['Filters', meta.filters.length > 0 ? JSON.stringify(meta.filters) : 'none'],
      [
        'Sort',
        meta.sort.length > 0 ? meta.sort.map((s) => `${s.fieldCode} ${s.direction}`).join(', ') : 'none',
      ],
      ['Search', meta.search ?? 'none'],
      ['Rows', written.rows],
      ['Exported by', meta.exportedBy],
      ['Exported at', meta.exportedAt.toISOString()],
    ];
    for (const [label, value] of lines)
      about.addRow([label, typeof value === 'number' ? value : neutralized(textOf(value))]).commit();
    about.commit();
    await workbook.commit();
    await finished;
  }
}
