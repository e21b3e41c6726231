import { ValidationError } from '../../common/errors/app-error';
import type { FieldDef } from '../../registry/registry.types';
import { writableFieldNames } from '../../profile/policy/masking';
import type { MaskKind } from '../../profile/policy/policy.types';
import type { RecordContext } from '../../records/record-context';
import { type Cell, type FileRow, unprefixed } from './import-file';

/** Case-blind, blind to spaces, dashes and underscores: "Customer Name" matches customer_name. */
function loose(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]/g, '');
}

/** The field each column of the header feeds (null: ignored), by the mapping or by name. */
function columnsOf(
  header: Cell[],
  ctx: RecordContext,
  mapping: Record<string, string | null>,
): { targets: Array<FieldDef | null>; ignored: string[] } {
  const names = new Set(writableFieldNames(ctx.policy, ctx.entity.fields));
  const writable = ctx.entity.fields.filter((f) => names.has(f.name));
  const mapped = new Map(Object.entries(mapping).map(([k, v]) => [loose(k), v]));
  const ignored: string[] = [];
  const used = new Set<string>();
  const targets = header.map((h) => {
    const name = h === null ? '' : String(h).trim();
    const explicit = mapped.get(loose(name));
    const want = explicit === undefined ? name : explicit;
    const field = want
      ? writable.find((f) => (explicit ? f.name === want : loose(f.name) === loose(want)))
      : undefined;
    if (explicit && !field)
      throw new ValidationError('Validation failed', [
        { field: `mapping.${name}`, error: `names no writable field of the entity: ${explicit}` },
      ]);
    if (!field || used.has(field.name)) {
      if (name) ignored.push(name);
      return null;
    }
    used.add(field.name);
    return field;
  });
  if (targets.every((t) => t === null))
    throw new ValidationError('Validation failed', [
      { field: 'file', error: 'no column of the header names a writable field' },
    ]);
  return { targets, ignored };
}

/** What masking (D43) shows instead of a value, by kind: such a cell is never stored as data. */
const MASKED_SHAPES: Record<MaskKind, RegExp> = {
  hash: /^sha256:[0-9a-f]{16}$/,
  mask: /^\*+$/,
  redact: /^$/,
  partial: /^(\*+[^*]{0,4}|[^*]\*\*\*@.+)$/,
};

/** A cell as the field's value (undefined: left out, the field's default applies). */
function valueOf(field: FieldDef, cell: Cell, masked: MaskKind | undefined): unknown {
  if (cell === null) return undefined;
  if (cell instanceof Date) return cell.toISOString().slice(0, field.type === 'date' ? 10 : undefined);
  if (typeof cell !== 'string') return cell;
  const text = unprefixed(cell);
  if (text === '') return undefined;
  // D43: a masked field's cell as an export showed it is left out, never written as the value.
  if (masked && MASKED_SHAPES[masked].test(text)) return undefined;
  switch (field.type) {
    case 'integer':
    case 'numeric':
      return /^\s*-?\d+(\.\d+)?\s*$/.test(text) ? Number(text) : text;
    case 'boolean': {
      const t = text.trim().toLowerCase();
      if (['true', '1', 'yes'].includes(t)) return true;
      if (['false', '0', 'no'].includes(t)) return false;
      return text;
    }
    case 'json':
      try {
        return JSON.parse(text) as unknown;
      } catch {
        return text;
      }
    case 'text':
    case 'email':
    case 'date':
    case 'select':
      return text;
  }
}

/** upsert: the key must be `id` or a unique field the caller may write. */
export function upsertKey(ctx: RecordContext, key: string | undefined): string {
  if (key === 'id') return key;
  const field = ctx.entity.fields.find((f) => f.name === key);
  if (!field || !field.unique || field.hidden)
    throw new ValidationError('Validation failed', [
      { field: 'key', error: 'must be id or a unique field of the entity' },
    ]);
  return field.name;
}

/** The column of the header that holds the key (by the mapping or by name); -1 when none. */
function keyColumn(header: Cell[], key: string, mapping: Record<string, string | null>): number {
  const mapped = new Map(Object.entries(mapping).map(([k, v]) => [loose(k), v]));
  return header.findIndex((h) => {
    const name = h === null ? '' : String(h).trim();
    const explicit = mapped.get(loose(name));
    return explicit ? explicit === key : loose(name) === loose(key);
  });
}

function cellNumber(cell: Cell): number | undefined {
  if (typeof cell === 'number') return cell;
  if (typeof cell === 'string' && /^\s*\d+\s*$/.test(cell)) return Number(cell);
  return undefined;
}

/** A data row of the file made ready for the write path. */
export interface PendingRow {
  row: number;
  cells: Cell[];
  body: Record<string, unknown>;
  /** upsert: the key's value in this row (undefined when the cell is empty). */
  key?: unknown;
}

/**
 * The file's lines as rows of the entity (D53): the header (row 1) names the columns' fields (by
 * the mapping or by name); each data row becomes the body a create or update takes, cells
 * converted to the fields' types, masked shapes and empty cells left out.
 */
export class RowReader {
  header: Cell[] = [];
  ignored: string[] = [];
  private targets: Array<FieldDef | null> = [];
  private keyAt = -1;

  /** The field each column of the header feeds (null: ignored); the error file keeps these columns. */
  get columns(): ReadonlyArray<FieldDef | null> {
    return this.targets;
  }

  constructor(
    private readonly ctx: RecordContext,
    private readonly mapping: Record<string, string | null>,
    private readonly key: string | null,
  ) {}

  /** The row of a data line; the header line sets the columns and is no row (undefined). */
  read(line: FileRow): PendingRow | undefined {
    if (line.row === 1) {
      this.header = line.cells;
      ({ targets: this.targets, ignored: this.ignored } = columnsOf(line.cells, this.ctx, this.mapping));
      if (this.key) this.keyAt = keyColumn(line.cells, this.key, this.mapping);
      return undefined;
    }
    const body: Record<string, unknown> = {};
    const masking = this.ctx.policy.masking;
    this.targets.forEach((field, i) => {
      const value = field ? valueOf(field, line.cells[i] ?? null, masking[field.name]) : undefined;
      if (field && value !== undefined) body[field.name] = value;
    });
    const pending: PendingRow = { row: line.row, cells: line.cells, body };
    if (this.key) {
      const cell = this.keyAt < 0 ? null : (line.cells[this.keyAt] ?? null);
      pending.key = this.key === 'id' ? cellNumber(cell) : this.key in body ? body[this.key] : undefined;
    }
    return pending;
  }
}
