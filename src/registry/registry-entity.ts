import {
  isColumnPrefix,
  isSqlIdentifier,
  isTableName,
  mergeRawPayloads,
  parsePayload,
  parseRawPayload,
  RegistryConfigError,
} from './registry-payload';
import type { ConventionColumns, EntityInfo, FieldDef, ObjectType } from './registry.types';

/** A live, active row of app_object_registries as the repository returns it. */
export interface RegistryRow {
  obj_id: number;
  obj_tenant_id: number | null;
  obj_code: string;
  obj_description: string | null;
  obj_type_code: string | null;
  obj_connection_code: string | null;
  obj_payload: string | null;
  obj_payload_object_name: string | null;
  obj_payload_identifier: string | null;
  obj_payload_column_prefix: string | null;
  obj_payload_table: string | null;
  obj_name: string | null;
  obj_db_key: string | null;
  obj_db_type: string | null;
  obj_connection_id: number | null;
  obj_add_dtls: string | null;
}

/** The columns a tenant row overrides when it has a value (NULL or '' inherits the system row's). */
const SCALAR_COLUMNS = [
  'obj_description',
  'obj_type_code',
  'obj_connection_code',
  'obj_payload_object_name',
  'obj_payload_identifier',
  'obj_payload_column_prefix',
  'obj_payload_table',
  'obj_name',
  'obj_db_key',
  'obj_db_type',
] as const satisfies ReadonlyArray<keyof RegistryRow>;

type Scalars = { [K in (typeof SCALAR_COLUMNS)[number]]: string | null };

/** D26: the SQL dialects the data layer speaks; NULL = the connection's own dialect. */
const SUPPORTED_DB_TYPES: ReadonlySet<string> = new Set([
  'mssql',
  'postgres',
  'postgresql',
  'mysql',
  'mariadb',
  'sqlite',
]);

export function normaliseDbType(value: string | null): string | null {
  const v = value?.trim().toLowerCase();
  return v ? v : null;
}

export function isSupportedDbType(dbType: string | null): boolean {
  return dbType === null || SUPPORTED_DB_TYPES.has(dbType);
}

const OBJECT_TYPES: ReadonlySet<string> = new Set<ObjectType>(['TABLE', 'VIEW', 'FUNCTION']);

const blankToNull = (value: string | null | undefined): string | null =>
  value === null || value === undefined || value.trim() === '' ? null : value;

function mergeScalars(system: RegistryRow | undefined, tenant: RegistryRow | undefined): Scalars {
  const out = {} as Scalars;
  for (const c of SCALAR_COLUMNS) out[c] = blankToNull(tenant?.[c]) ?? blankToNull(system?.[c]);
  return out;
}

/** `obj_add_dtls.maintainedBy` (D21) of one row; undefined when the row does not say. */
function maintainedByOf(row: RegistryRow | undefined): 'system' | 'tenant' | undefined {
  if (!row || blankToNull(row.obj_add_dtls) === null) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(String(row.obj_add_dtls));
  } catch {
    throw new RegistryConfigError('obj_add_dtls is not valid JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new RegistryConfigError('obj_add_dtls is not a JSON object');
  }
  const value = (parsed as Record<string, unknown>).maintainedBy;
  if (value === undefined || value === null) return undefined;
  if (value !== 'system' && value !== 'tenant') {
    throw new RegistryConfigError(
      `obj_add_dtls.maintainedBy ${JSON.stringify(value)} is not system or tenant`,
    );
  }
  return value;
}

export function conventionColumnsOf(prefix: string): ConventionColumns {
  return {
    tenant: `${prefix}tenant_id`,
    status: `${prefix}status`,
    isDeleted: `${prefix}is_deleted`,
    auditData: `${prefix}audit_data`,
    addDtls: `${prefix}add_dtls`,
    lastModified: `${prefix}last_modified`,
  };
}

/**
 * The top-level names under /api/v1 that are the service's own route families (issue 24 #6): an
 * entity with one of these codes would be shadowed by them (`/api/v1/webhooks` is the webhooks
 * route, never an entity list), so the registry refuses such codes. The route walk in
 * test/registry/reserved-codes.e2e-spec.ts keeps this list and the routes in step.
 */
export const RESERVED_ENTITY_CODES = [
  'admin',
  'auth',
  'changes',
  'config',
  'dataviews',
  'downloads',
  'exports',
  'health',
  'imports',
  'records',
  'webhooks',
  'workflows',
] as const;

/** Whether `code` names a top-level route family of /api/v1 (compared case-blind, as URLs are typed). */
export function isReservedEntityCode(code: string): boolean {
  return (RESERVED_ENTITY_CODES as readonly string[]).includes(code.toLowerCase());
}

/**
 * The EntityInfo of an entity from its system-wide row and the caller's tenant row (either may be
 * missing, not both). Throws RegistryConfigError on anything unusable.
 */
export function buildEntityInfo(
  system: RegistryRow | undefined,
  tenant: RegistryRow | undefined,
): EntityInfo {
  const winner = tenant ?? system;
  if (!winner) throw new RegistryConfigError('no registry row');
  if (isReservedEntityCode(winner.obj_code)) {
    throw new RegistryConfigError(
      `entity code ${JSON.stringify(winner.obj_code)} is a top-level name of /api/v1 (${RESERVED_ENTITY_CODES.join(', ')}): ` +
        "its routes would be shadowed by the service's own; give the entity another code",
    );
  }
  const s = mergeScalars(system, tenant);

  const typeCode = (s.obj_type_code ?? 'TABLE').trim().toUpperCase();
  if (!OBJECT_TYPES.has(typeCode)) {
    throw new RegistryConfigError(
      `obj_type_code ${JSON.stringify(s.obj_type_code)} is not TABLE, VIEW or FUNCTION`,
    );
  }

  const declaredKey = s.obj_payload_identifier ?? s.obj_db_key;
  // Spec 2.1: columns are `<p>_…`; a prefix given without its underscore gets one. Without a prefix,
  // the one of the primary key (`cus_id` → `cus_`) is used.
  let prefix = s.obj_payload_column_prefix ?? /^(.+_)id$/i.exec(declaredKey ?? '')?.[1] ?? null;
  if (prefix === null) throw new RegistryConfigError('no column prefix and no primary key to derive it from');
  if (!prefix.endsWith('_')) prefix = `${prefix}_`;
  if (!isColumnPrefix(prefix)) {
    throw new RegistryConfigError(`column prefix ${JSON.stringify(prefix)} is not a plain identifier`);
  }

  const primaryKeyColumn = declaredKey ?? `${prefix}id`;
  if (!isSqlIdentifier(primaryKeyColumn)) {
    throw new RegistryConfigError(
      `primary key ${JSON.stringify(primaryKeyColumn)} is not a plain identifier`,
    );
  }
  const table = s.obj_payload_table ?? s.obj_payload_object_name;
  if (!isTableName(table)) {
    throw new RegistryConfigError(`table ${JSON.stringify(table)} is not a (schema-qualified) identifier`);
  }

  const dbType = normaliseDbType(s.obj_db_type);
  const supported = isSupportedDbType(dbType);
  // D26: an unsupported type gets the default configuration; its payload is not read at all.
  const { fields, relations } = supported
    ? parsePayload(
        mergeRawPayloads(
          system ? parseRawPayload(system.obj_payload) : undefined,
          tenant ? parseRawPayload(tenant.obj_payload) : undefined,
        ),
        primaryKeyColumn,
      )
    : { fields: [], relations: [] };

  // D21: a tenant row can make an entity system-maintained, never the reverse.
  const maintainedBy = [maintainedByOf(system), maintainedByOf(tenant)].includes('system')
    ? 'system'
    : 'tenant';

  return {
    code: winner.obj_code,
    registryId: winner.obj_id,
    registryTenantId: winner.obj_tenant_id === null ? null : String(winner.obj_tenant_id),
    description: s.obj_description ?? s.obj_name,
    type: typeCode as ObjectType,
    dbType,
    supported,
    connectionCode: s.obj_connection_code,
    table,
    primaryKeyColumn,
    prefix,
    fields,
    relations,
    maintainedBy,
    columns: conventionColumnsOf(prefix),
  };
}

/** The field of an API name (exact, case-sensitive). */
export function fieldByName(info: EntityInfo, name: string): FieldDef | undefined {
  return info.fields.find((f) => f.name === name);
}

/** The column of an API name; undefined for names the registry does not define. */
export function columnOf(info: EntityInfo, name: string): string | undefined {
  return fieldByName(info, name)?.column;
}
