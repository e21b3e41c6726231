import type { Writable } from 'node:stream';
import type { Row } from '../../records/records-read.repository';

/** The formats of `export.exportFormats` (spec §2.9.1). */
export const EXPORT_FORMATS = ['csv', 'excel', 'pdf'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** How a column's values are written: the registry type decides, a masked value stays text. */
export type CellKind = 'text' | 'number' | 'date' | 'boolean';

/** A visible column with a fieldCode, in columnOrder. */
export interface ExportColumn {
  fieldCode: string;
  header: string;
  /** columnWidth in pixels, when configured. */
  widthPx: number | null;
  kind: CellKind;
}

/** What the file says about itself (XLSX "About" sheet, PDF heading). */
export interface ExportMeta {
  dataviewCode: string;
  dataviewName: string;
  /** The filters applied (the defaults, then the request's), as {fieldCode, operator, value}. */
  filters: Array<{ fieldCode: string; operator: string; value?: unknown }>;
  sort: Array<{ fieldCode: string; direction: string }>;
  search: string | null;
  exportedBy: string;
  exportedAt: Date;
}

/** What a renderer writes: the header, the rows (in keyset batches), and the footer aggregates. */
export interface ExportInput {
  columns: ExportColumn[];
  batches: AsyncIterable<Row[]>;
  /** Aggregates by fieldCode, asked for once the rows are written; undefined when none is configured. */
  aggregates?: () => Promise<Record<string, unknown>>;
  meta: ExportMeta;
  /** Filled by the renderer as rows are written. */
  written: { rows: number };
}

/** One output format. A renderer writes the whole file to `out` and resolves when it is finished. */
export interface ExportRenderer {
  readonly format: ExportFormat;
  readonly extension: string;
  readonly contentType: string;
  render(input: ExportInput, out: Writable): Promise<void>;
}

/**
 * What a spreadsheet may take for the start of a formula (D48, issue 21 #2): `=`, `+`, `-`, `@` and
 * `;` (a separator in locales that split CSV on it), also in their full-width and small forms
 * (`＝＋－＠；`, `﹦﹢﹣﹫﹔`: NFKC folds them to the ASCII ones, and so do IMEs and some spreadsheets),
 * after any leading blanks (spreadsheets trim them); and a line that starts with a tab, CR or LF.
 */
const FORMULA_CHAR = /^[=+\-@;]$/;
const LEADING_BLANKS = /^[\s\u200B-\u200D\u2060]*/;

export function startsFormula(line: string): boolean {
  if (/^[\t\r\n]/.test(line)) return true;
  const first = line.slice(LEADING_BLANKS.exec(line)![0].length).codePointAt(0);
  return first !== undefined && FORMULA_CHAR.test(String.fromCodePoint(first).normalize('NFKC'));
}

/**
 * D48: text that a spreadsheet would read as a formula is prefixed with `'`. Every line of a
 * multi-line cell is checked, so a reader that splits rows on a lone CR or LF (or a cell pasted
 * line by line) never finds a formula at the start of one either. Numbers never reach this.
 */
export function neutralized(text: string): string {
  const parts = text.split(/(\r\n|\r|\n)/);
  for (let i = 0; i < parts.length; i += 2) {
    // parts[i - 1] is the line break before parts[i]; a cell that starts with one is caught at i = 0.
    if (startsFormula(i === 0 ? text : parts[i])) parts[i] = `'${parts[i]}`;
  }
  return parts.join('');
}

/** A value as plain text (JSON for objects; '' for null). */
export function textOf(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'object') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint')
    return String(value);
  return '';
}

/** A YYYY-MM-DD (or ISO) text as a Date at UTC midnight; undefined when it is not one. */
export function dateOf(value: unknown): Date | undefined {
  if (value instanceof Date) return value;
  if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}/.test(value)) return undefined;
  const d = new Date(value.length === 10 ? `${value}T00:00:00Z` : value);
  return Number.isNaN(d.getTime()) ? undefined : d;
}

/** A numeric value (numbers, or numeric text as some drivers give decimals); undefined otherwise. */
export function numberOf(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value === 'bigint') return Number(value);
  if (typeof value === 'string' && /^-?\d+(\.\d+)?$/.test(value)) return Number(value);
  return undefined;
}

/**
 * A cell's typed value: a number, a Date or a boolean when the column is of that kind and the value
 * is one (a masked value is text), else text with formulas neutralized (D48). Null stays null.
 */
export function typedCell(column: ExportColumn, value: unknown): string | number | boolean | Date | null {
  if (value === null || value === undefined) return null;
  if (column.kind === 'number') {
    const n = numberOf(value);
    if (n !== undefined) return n;
  } else if (column.kind === 'date') {
    const d = dateOf(value);
    if (d) return d;
  } else if (column.kind === 'boolean' && typeof value === 'boolean') return value;
  return neutralized(textOf(value));
}

/** A value for a human to read (PDF): dates as YYYY-MM-DD, booleans as yes/no. */
export function displayText(column: ExportColumn, value: unknown): string {
  if (value === null || value === undefined) return '';
  if (column.kind === 'date' && value instanceof Date) return value.toISOString().slice(0, 10);
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  return textOf(value);
}

/** `exportFilename` with `{date}` as YYYY-MM-DD, reduced to safe characters, plus the extension. */
export function exportFilename(
  template: string | undefined,
  code: string,
  at: Date,
  extension: string,
): string {
  const date = at.toISOString().slice(0, 10);
  const base = (template && template.trim() !== '' ? template : `${code}_{date}`).split('{date}').join(date);
  const safe = base
    .replace(/[^A-Za-z0-9._-]+/g, '_')
    .replace(/^[._]+/, '')
    .slice(0, 120);
  return `${safe === '' ? 'export' : safe}.${extension}`;
}
