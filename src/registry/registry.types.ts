/**
 * The registry's view of an entity, resolved from app_object_registries (spec §2.5, D20-D26).
 * Field metadata lives in `obj_payload` as `{fields, relations}` (see docs/behaviour-and-decisions.md, "Behaviour notes").
 */
export type FieldType = 'text' | 'email' | 'integer' | 'numeric' | 'date' | 'boolean' | 'select' | 'json';

export interface FieldDef {
  /** Name on the wire and in filters, projections and dataview fieldCodes. */
  name: string;
  /** Real column; always taken from the registry, never from a request. */
  column: string;
  type: FieldType;
  required: boolean;
  /** Unique among the live rows of the same tenant. */
  unique: boolean;
  maxLength?: number;
  min?: number;
  max?: number;
  /** `numeric` columns: DECIMAL(precision, scale); default DECIMAL(12, 2), the schema's. */
  precision?: number;
  scale?: number;
  /** Regular expression (source) a text value must match. */
  pattern?: string;
  /** For `select`: the vs_code whose values are allowed. */
  valueSet?: string;
  references?: { entity: string; field: string };
  /** Set by the service (the identifier); never written by a client. */
  readOnly: boolean;
  /** Never read or written through the generic API (e.g. password hashes). */
  hidden: boolean;
}

export interface RelationDef {
  entity: string;
  /** The dependent entity's field that holds this entity's id. */
  foreignKey: string;
  onDelete: 'restrict' | 'cascade';
}

export type ObjectType = 'TABLE' | 'VIEW' | 'FUNCTION';

/** Column names of the spec §2.1 convention (+ D4 last_modified) for an entity table. */
export interface ConventionColumns {
  tenant: string;
  status: string;
  isDeleted: string;
  auditData: string;
  addDtls: string;
  lastModified: string;
}

export interface EntityInfo {
  code: string;
  /** Registry row id and tenant of the winning row (tenant row over system row, D20). */
  registryId: number;
  registryTenantId: string | null;
  description: string | null;
  type: ObjectType;
  /** obj_db_type; null = the dialect of the connection. */
  dbType: string | null;
  /** D26: false for mongodb, oracle and other unsupported types (data operations answer 501). */
  supported: boolean;
  /** obj_connection_code; null or 'default' = the configuration database (D3). */
  connectionCode: string | null;
  table: string;
  /** Primary key column (obj_payload_identifier / obj_db_key). */
  primaryKeyColumn: string;
  /** Field prefix, e.g. `cus_` (obj_payload_column_prefix). */
  prefix: string;
  fields: FieldDef[];
  relations: RelationDef[];
  /** D21: obj_add_dtls.maintainedBy, default 'tenant'. */
  maintainedBy: 'system' | 'tenant';
  columns: ConventionColumns;
}
