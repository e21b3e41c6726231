import { CsvRenderer } from './csv.renderer';
import type { ExportFormat, ExportRenderer } from './export-model';
import { PdfRenderer } from './pdf.renderer';
import { XlsxRenderer } from './xlsx.renderer';

/**
 * One renderer per format. The main thread reads only their extension and content type; the
 * rendering itself runs in a render thread (render.worker.ts), where exceljs and pdfkit are loaded.
 */
export const RENDERERS: Record<ExportFormat, ExportRenderer> = {
  csv: new CsvRenderer(),
  excel: new XlsxRenderer(),
  pdf: new PdfRenderer(),
};
