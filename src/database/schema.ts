import { Table, TableColumnOptions } from 'typeorm';
import { Dialect, dialectTypes } from './dialect';

/**
 * The configuration database and demo entity tables, declared once and turned into TypeORM Table
 * objects per dialect by the migrations. Column names are the spec's (§2), prefixes included.
 */
type Kind = 'id' | 'int' | 'string' | 'json' | 'text' | 'bool' | 'decimal' | 'date' | 'timestamp';

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

const id = (p: string): ColumnDef => ({ name: `${p}_id`, kind: 'id' });
const str = (name: string, length: number, nullable = true): ColumnDef => ({
  name,
  kind: 'string',
  length,
  nullable,
});
const int = (name: string, nullable = true, def?: number): ColumnDef => ({
  name,
  kind: 'int',
  nullable,
  default: def,
});
const json = (name: string): ColumnDef => ({ name, kind: 'json', nullable: true });
const text = (name: string): ColumnDef => ({ name, kind: 'text', nullable: true });
const ts = (name: string, nullable = true): ColumnDef => ({ name, kind: 'timestamp', nullable });

type TenantColumn = 'required' | 'nullable' | 'none';

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

const tenantFk = (p: string): ForeignKeyDef => ({
  column: `${p}_tenant_id`,
  table: 'app_tenants',
  refColumn: 'tnt_id',
});

export const TABLES: readonly TableDef[] = [
  {
    name: 'app_tenants',
    prefix: 'tnt',
    columns: [
      id('tnt'),
      str('tnt_tenant_code', 100, false),
      str('tnt_tenant_name', 200, false),
      str('tnt_description', 500),
      json('tnt_features'),
      ...conventionColumns('tnt', 'none'),
    ],
    indices: [{ columns: ['tnt_tenant_code'], unique: true }],
  },
  {
    name: 'app_roles',
    prefix: 'rol',
    columns: [
      id('rol'),
      str('rol_code', 100, false),
      str('rol_description', 500),
      json('rol_permissions'),
      ...conventionColumns('rol', 'nullable'),
    ],
    // Role codes repeat across tenants (ADMIN in every tenant): unique per tenant.
    indices: [{ columns: ['rol_tenant_id', 'rol_code'], unique: true }],
    foreignKeys: [tenantFk('rol')],
  },
  {
    name: 'app_users',
    prefix: 'usr',
    columns: [
      id('usr'),
      str('usr_email_id', 100, false),
      str('usr_first_name', 100),
      str('usr_last_name', 100),
      str('usr_password_hash', 255),
      int('usr_role_id'),
      ...conventionColumns('usr', 'required'),
    ],
    // Spec §2.3's composite index; unique, so one e-mail signs in once per tenant.
    indices: [{ columns: ['usr_tenant_id', 'usr_email_id'], unique: true }],
    foreignKeys: [tenantFk('usr'), { column: 'usr_role_id', table: 'app_roles', refColumn: 'rol_id' }],
  },
  {
    name: 'app_object_registries',
    prefix: 'obj',
    columns: [
      id('obj'),
      str('obj_code', 100, false),
      str('obj_description', 500),
      str('obj_type_code', 20, false),
      str('obj_connection_code', 100),
      json('obj_payload'),
      str('obj_payload_object_name', 256),
      str('obj_payload_identifier', 128),
      str('obj_payload_column_prefix', 64),
      str('obj_payload_table', 256),
      str('obj_name', 200),
      str('obj_db_key', 128),
      str('obj_db_type', 20),
      int('obj_connection_id'),
      ...conventionColumns('obj', 'nullable'),
    ],
    indices: [{ columns: ['obj_code', 'obj_tenant_id'] }],
  },
  {
    name: 'app_object_profiles',
    prefix: 'prf',
    columns: [
      id('prf'),
      str('prf_code', 100, false),
      str('prf_description', 500),
      str('prf_object_code', 100, false),
      str('prf_mode_code', 20, false),
      json('prf_policy'),
      json('prf_payload'),
      json('prf_policy_tenantpolicy'),
      json('prf_policy_projection'),
      str('prf_policy_encryption_required', 255),
      str('prf_policy_audit_level', 255),
      ...conventionColumns('prf', 'nullable'),
    ],
    indices: [{ columns: ['prf_code'], unique: true }, { columns: ['prf_object_code', 'prf_tenant_id'] }],
  },
  {
    name: 'app_page_configs',
    prefix: 'pgc',
    columns: [
      id('pgc'),
      str('pgc_code', 100, false),
      str('pgc_name', 200),
      str('pgc_type', 20),
      str('pgc_object_code', 100),
      json('pgc_schema'),
      ...conventionColumns('pgc', 'nullable'),
    ],
    indices: [{ columns: ['pgc_code', 'pgc_tenant_id'] }],
  },
  {
    name: 'app_workflow_configs',
    prefix: 'wft',
    columns: [
      id('wft'),
      str('wft_code', 100, false),
      str('wft_name', 200),
      str('wft_description', 500),
      json('wft_schema'),
      int('wft_version', false, 1),
      ...conventionColumns('wft', 'nullable'),
    ],
    indices: [{ columns: ['wft_code', 'wft_tenant_id', 'wft_version'] }],
  },
  {
    name: 'app_dataview_configs',
    prefix: 'dvc',
    columns: [
      id('dvc'),
      str('dvc_code', 256, false),
      str('dvc_description', 500),
      str('dvc_source_entity', 100, false),
      json('dvc_config'),
      int('dvc_page_config_id'),
      { name: 'dvc_is_default', kind: 'bool', nullable: false, default: 'false' },
      ...conventionColumns('dvc', 'nullable'),
    ],
    indices: [{ columns: ['dvc_code', 'dvc_tenant_id'] }],
  },
  {
    name: 'app_navigation_configs',
    prefix: 'nav',
    columns: [
      id('nav'),
      str('nav_code', 100, false),
      json('nav_structure'),
      ...conventionColumns('nav', 'nullable'),
    ],
    indices: [{ columns: ['nav_code', 'nav_tenant_id'] }],
  },
  {
    name: 'app_value_sets',
    prefix: 'vs',
    columns: [
      id('vs'),
      str('vs_code', 100, false),
      str('vs_description', 500),
      json('vs_values'),
      ...conventionColumns('vs', 'nullable'),
    ],
    indices: [{ columns: ['vs_code', 'vs_tenant_id'] }],
  },
  {
    name: 'app_connections',
    prefix: 'con',
    columns: [
      id('con'),
      str('con_code', 100, false),
      text('con_connection_string'),
      str('con_connection_type', 20, false),
      ...conventionColumns('con', 'nullable'),
    ],
    indices: [{ columns: ['con_code'], unique: true }],
  },
  {
    name: 'wft_instances',
    prefix: 'wfi',
    columns: [
      id('wfi'),
      int('wfi_tenant_id', false),
      int('wfi_workflow_id', false),
      str('wfi_workflow_code', 100, false),
      int('wfi_workflow_version', false, 1),
      str('wfi_status', 20, false),
      str('wfi_current_node', 100),
      text('wfi_error_message'),
      json('wfi_input'),
      json('wfi_context'),
      int('wfi_started_by'),
      ts('wfi_created_at', false),
      ts('wfi_updated_at'),
      ts('wfi_completed_at'),
    ],
    indices: [{ columns: ['wfi_tenant_id', 'wfi_status'] }],
    foreignKeys: [{ column: 'wfi_tenant_id', table: 'app_tenants', refColumn: 'tnt_id' }],
  },
  {
    name: 'wft_node_states',
    prefix: 'wns',
    columns: [
      id('wns'),
      int('wns_tenant_id', false),
      int('wns_instance_id', false),
      str('wns_node_id', 100, false),
      str('wns_status', 20, false),
      text('wns_error'),
      int('wns_attempts', false, 0),
      json('wns_output'),
      ts('wns_started_at'),
      ts('wns_finished_at'),
    ],
    indices: [{ columns: ['wns_instance_id', 'wns_node_id'] }],
    foreignKeys: [{ column: 'wns_instance_id', table: 'wft_instances', refColumn: 'wfi_id' }],
  },
  {
    name: 'wft_logs',
    prefix: 'wfl',
    columns: [
      id('wfl'),
      int('wfl_tenant_id', false),
      int('wfl_instance_id', false),
      str('wfl_level', 10, false),
      text('wfl_message'),
      json('wfl_data'),
      ts('wfl_created_at', false),
    ],
    indices: [{ columns: ['wfl_instance_id', 'wfl_id'] }],
    foreignKeys: [{ column: 'wfl_instance_id', table: 'wft_instances', refColumn: 'wfi_id' }],
  },
  {
    name: 'wft_queue',
    prefix: 'wfq',
    columns: [
      id('wfq'),
      int('wfq_tenant_id', false),
      int('wfq_instance_id', false),
      str('wfq_node_id', 100, false),
      str('wfq_status', 20, false),
      int('wfq_attempts', false, 0),
      json('wfq_payload'),
      ts('wfq_available_at', false),
      str('wfq_claimed_by', 100),
      ts('wfq_claimed_at'),
      ts('wfq_created_at', false),
    ],
    indices: [{ columns: ['wfq_status', 'wfq_available_at'] }, { columns: ['wfq_instance_id'] }],
    foreignKeys: [{ column: 'wfq_instance_id', table: 'wft_instances', refColumn: 'wfi_id' }],
  },
  {
    name: 'app_audit_logs',
    prefix: 'aud',
    columns: [
      id('aud'),
      int('aud_tenant_id'),
      int('aud_user_id'),
      str('aud_event', 50, false),
      str('aud_entity_code', 100),
      str('aud_record_id', 64),
      json('aud_before'),
      json('aud_after'),
      str('aud_request_id', 128),
      ts('aud_at', false),
    ],
    indices: [{ columns: ['aud_tenant_id', 'aud_entity_code', 'aud_at'] }],
  },
  {
    name: 'demo_customers',
    prefix: 'cus',
    columns: [
      id('cus'),
      str('cus_name', 100, false),
      str('cus_email', 255, false),
      str('cus_phone', 50),
      str('cus_tier', 20),
      { name: 'cus_credit_limit', kind: 'decimal', precision: 12, scale: 2, nullable: true },
      text('cus_internal_notes'),
      ...conventionColumns('cus', 'required'),
    ],
    indices: [{ columns: ['cus_tenant_id', 'cus_email'] }, { columns: ['cus_tenant_id', 'cus_name'] }],
    foreignKeys: [tenantFk('cus')],
  },
  {
    name: 'demo_orders',
    prefix: 'ord',
    columns: [
      id('ord'),
      int('ord_customer_id', false),
      { name: 'ord_amount', kind: 'decimal', precision: 12, scale: 2, nullable: false },
      // The business field `status` (DEMO.md); ord_status is the record status of spec §2.1.
      str('ord_order_status', 20),
      { name: 'ord_ordered_at', kind: 'date', nullable: true },
      ...conventionColumns('ord', 'required'),
    ],
    indices: [{ columns: ['ord_tenant_id', 'ord_customer_id'] }],
    foreignKeys: [
      tenantFk('ord'),
      { column: 'ord_customer_id', table: 'demo_customers', refColumn: 'cus_id' },
    ],
  },
];

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

function shortName(kind: 'IDX' | 'UQ' | 'FK', table: string, cols: string[]): string {
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
