/**
 * The configuration database and demo entity tables, declared once and turned into TypeORM Table
 * objects per dialect by the migrations. Column names are the spec's (§2), prefixes included.
 */
export type Kind = 'id' | 'int' | 'string' | 'json' | 'text' | 'bool' | 'decimal' | 'date' | 'timestamp';

export interface ColumnDef {
  name: string;
  kind: Kind;
  length?: number;
  nullable?: boolean;
  /** 'true' / 'false' for bool columns, a number otherwise. */
  default?: number | 'true' | 'false';
  precision?: number;
  scale?: number;
}

export interface IndexDef {
  columns: string[];
  unique?: boolean;
}

export interface ForeignKeyDef {
  column: string;
  table: string;
  refColumn: string;
}

export interface TableDef {
  name: string;
  prefix: string;
  columns: ColumnDef[];
  indices?: IndexDef[];
  foreignKeys?: ForeignKeyDef[];
}

export const id = (p: string): ColumnDef => ({ name: `${p}_id`, kind: 'id' });
export const str = (name: string, length: number, nullable = true): ColumnDef => ({
  name,
  kind: 'string',
  length,
  nullable,
});
export const int = (name: string, nullable = true, def?: number): ColumnDef => ({
  name,
  kind: 'int',
  nullable,
  default: def,
});
export const json = (name: string): ColumnDef => ({ name, kind: 'json', nullable: true });
export const text = (name: string): ColumnDef => ({ name, kind: 'text', nullable: true });
export const ts = (name: string, nullable = true): ColumnDef => ({ name, kind: 'timestamp', nullable });

export type TenantColumn = 'required' | 'nullable' | 'none';

/** The columns every configuration table has (spec §2.1) plus `<p>_last_modified` (D4). */
export function conventionColumns(p: string, tenant: TenantColumn): ColumnDef[] {
  const cols: ColumnDef[] = [];
  if (tenant !== 'none') cols.push(int(`${p}_tenant_id`, tenant === 'nullable'));
  cols.push(
    int(`${p}_status`, false, 1),
    { name: `${p}_is_deleted`, kind: 'bool', nullable: false, default: 'false' },
    json(`${p}_audit_data`),
    json(`${p}_add_dtls`),
    ts(`${p}_last_modified`),
  );
  return cols;
}

export const tenantFk = (p: string): ForeignKeyDef => ({
  column: `${p}_tenant_id`,
  table: 'app_tenants',
  refColumn: 'tnt_id',
});
