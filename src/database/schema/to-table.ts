import { Table, TableColumn, TableColumnOptions, TableIndex } from 'typeorm';
import { Dialect, dialectTypes } from '../dialect';
import type { ColumnDef, IndexDef, TableDef } from './columns';

function columnOptions(col: ColumnDef, dialect: Dialect): TableColumnOptions {
  const t = dialectTypes(dialect);
  const base = { name: col.name, isNullable: col.nullable ?? false };
  switch (col.kind) {
    case 'id':
      return {
        ...base,
        ...t.id,
        isNullable: false,
        isPrimary: true,
        isGenerated: true,
        generationStrategy: 'increment',
      };
    case 'int':
      return { ...base, ...t.int, default: col.default };
    case 'string':
      return { ...base, ...t.string(col.length ?? 255) };
    case 'json':
      return { ...base, ...t.json };
    case 'text':
      return { ...base, ...t.longText };
    case 'bool':
      return {
        ...base,
        ...t.bool,
        default:
          col.default === undefined
            ? undefined
            : boolLiteral(dialect, col.default === 'true' ? 'true' : 'false'),
      };
    case 'decimal':
      return { ...base, ...t.decimal(col.precision ?? 12, col.scale ?? 2) };
    case 'date':
      return { ...base, ...t.date };
    case 'timestamp':
      return { ...base, ...t.timestamp };
  }
}

function boolLiteral(dialect: Dialect, value: 'true' | 'false'): string {
  if (dialect === 'postgres') return value;
  return value === 'true' ? '1' : '0';
}

export function shortName(kind: 'IDX' | 'UQ' | 'FK', table: string, cols: string[]): string {
  // Within MySQL's 64-character identifier limit.
  return `${kind}_${table}_${cols.join('_')}`.slice(0, 60);
}

export function toTable(def: TableDef, dialect: Dialect): Table {
  return new Table({
    name: def.name,
    columns: def.columns.map((c) => columnOptions(c, dialect)),
    indices: (def.indices ?? []).map((i) => ({
      name: shortName(i.unique ? 'UQ' : 'IDX', def.name, i.columns),
      columnNames: i.columns,
      isUnique: i.unique ?? false,
    })),
    foreignKeys: (def.foreignKeys ?? []).map((fk) => ({
      name: shortName('FK', def.name, [fk.column]),
      columnNames: [fk.column],
      referencedTableName: fk.table,
      referencedColumnNames: [fk.refColumn],
    })),
  });
}

/** A column added to an existing table by a later migration. */
export function toTableColumn(col: ColumnDef, dialect: Dialect): TableColumn {
  return new TableColumn(columnOptions(col, dialect));
}

/** An index added to an existing table by a later migration, named as toTable names them. */
export function toTableIndex(table: string, index: IndexDef): TableIndex {
  return new TableIndex({
    name: shortName(index.unique ? 'UQ' : 'IDX', table, index.columns),
    columnNames: index.columns,
    isUnique: index.unique ?? false,
  });
}
