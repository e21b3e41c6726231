import { once } from 'node:events';
import type { Writable } from 'node:stream';
import type PDFDocumentClass from 'pdfkit';
import { lazyModule } from '../../common/lazy-module';
import { displayText, ExportColumn, ExportInput, ExportRenderer } from './export-model';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on the first PDF export
const pdfkit = lazyModule<typeof PDFDocumentClass>(() => require('pdfkit'));

const MARGIN = 36;
const FONT_SIZE = 8;
const ROW_HEIGHT = 14;
const CELL_PAD = 3;
const DEFAULT_WIDTH_PX = 120;

/** Where each column starts and how wide it is, scaled from columnWidth to the page width. */
function layout(columns: readonly ExportColumn[], pageWidth: number): Array<{ x: number; width: number }> {
  const px = columns.map((c) => c.widthPx ?? DEFAULT_WIDTH_PX);
  const total = px.reduce((a, b) => a + b, 0) || 1;
  let x = MARGIN;
  return px.map((w) => {
    const width = (w / total) * pageWidth;
    const cell = { x, width };
    x += width;
    return cell;
  });
}

/**
 * PDF through pdfkit (A4 landscape, streamed page by page): the dataview's name, the filters used
 * and the date above the table on the first page, the header row repeated on every page, and
 * "Page n" at the foot of each. Cells are one line, cut with an ellipsis when too long.
 */
export class PdfRenderer implements ExportRenderer {
  readonly format = 'pdf' as const;
  readonly extension = 'pdf';
  readonly contentType = 'application/pdf';

  async render(input: ExportInput, out: Writable): Promise<void> {
    const { columns, meta, written } = input;
    const doc = new (pdfkit())({
      size: 'A4',
      layout: 'landscape',
      margin: MARGIN,
      info: { Title: meta.dataviewName, Author: meta.exportedBy, CreationDate: meta.exportedAt },
    });
    const finished = once(out, 'finish');
    doc.pipe(out);
    const pageWidth = doc.page.width - 2 * MARGIN;
    const cells = layout(columns, pageWidth);
    let pageNo = 1;
    let y = MARGIN;

    const line = (texts: string[], bold: boolean) => {
      doc.font(bold ? 'Helvetica-Bold' : 'Helvetica').fontSize(FONT_SIZE);
      texts.forEach((text, i) =>
        doc.text(text, cells[i].x + CELL_PAD, y + CELL_PAD, {
          width: Math.max(1, cells[i].width - 2 * CELL_PAD),
          height: ROW_HEIGHT,
          lineBreak: false,
          ellipsis: true,
        }),
      );
      y += ROW_HEIGHT;
      doc
        .moveTo(MARGIN, y)
        .lineTo(MARGIN + pageWidth, y)
        .lineWidth(bold ? 0.8 : 0.3)
        .strokeColor('#999999')
        .stroke();
    };
    const footer = () => {
      const bottom = doc.page.margins.bottom;
      doc.page.margins.bottom = 0; // writing below the margin must not open a page
      doc
        .font('Helvetica')
        .fontSize(FONT_SIZE)
        .text(`${meta.dataviewName} — page ${pageNo}`, MARGIN, doc.page.height - MARGIN / 2 - FONT_SIZE, {
          width: pageWidth,
          align: 'right',
          lineBreak: false,
        });
      doc.page.margins.bottom = bottom;
    };
    const headerRow = () =>
      line(
        columns.map((c) => c.header),
        true,
      );
    const limit = () => doc.page.height - MARGIN - ROW_HEIGHT;

    // Heading: name, filters, date.
    doc.font('Helvetica-Bold').fontSize(14).text(meta.dataviewName, MARGIN, y, { width: pageWidth });
    doc.font('Helvetica').fontSize(FONT_SIZE + 1);
    const filters =
      meta.filters.length > 0
        ? meta.filters
            .map(
              (f) =>
                `${f.fieldCode} ${f.operator}${f.value === undefined ? '' : ` ${JSON.stringify(f.value)}`}`,
            )
            .join('; ')
        : 'none';
    doc.text(`Filters: ${filters}`, { width: pageWidth });
    if (meta.search) doc.text(`Search: ${meta.search}`, { width: pageWidth });
    doc.text(`Exported ${meta.exportedAt.toISOString().slice(0, 10)} by ${meta.exportedBy}`, {
      width: pageWidth,
    });
    y = doc.y + 8;
    footer();
    headerRow();

    for await (const batch of input.batches)
      for (const row of batch) {
        if (y > limit()) {
          doc.addPage();
          pageNo++;
          y = MARGIN;
          footer();
          headerRow();
        }
        written.rows++;
        line(
          columns.map((c) => displayText(c, row[c.fieldCode])),
          false,
        );
      }

    if (input.aggregates) {
      const totals = await input.aggregates();
      if (y > limit()) {
        doc.addPage();
        pageNo++;
        y = MARGIN;
        footer();
        headerRow();
      }
      line(
        columns.map((c) => (totals[c.fieldCode] === undefined ? '' : displayText(c, totals[c.fieldCode]))),
        true,
      );
    }
    doc.end();
    await finished;
  }
}
