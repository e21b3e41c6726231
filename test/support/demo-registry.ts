import { DEMO_ENTITIES } from '../../src/database/seed/demo-data';
import { buildEntityInfo, type RegistryRow } from '../../src/registry/registry-entity';
import type { EntityInfo } from '../../src/registry/registry.types';

/** The system-wide registry row of a demo entity exactly as the demo seed writes it. */
export function demoRegistryRow(code: string, overrides: Partial<RegistryRow> = {}): RegistryRow {
  const e = DEMO_ENTITIES.find((x) => x.code === code);
  if (!e) throw new Error(`no demo entity ${code}`);
  return {
    obj_id: DEMO_ENTITIES.indexOf(e) + 1,
    obj_tenant_id: null,
    obj_code: e.code,
    obj_description: e.name,
    obj_type_code: 'TABLE',
    obj_connection_code: 'default',
    obj_payload: JSON.stringify(e.payload),
    obj_payload_object_name: e.table,
    obj_payload_identifier: e.identifier,
    obj_payload_column_prefix: e.prefix,
    obj_payload_table: e.table,
    obj_name: e.name,
    obj_db_key: e.identifier,
    obj_db_type: null,
    obj_connection_id: null,
    obj_add_dtls: JSON.stringify({ maintainedBy: e.maintainedBy }),
    ...overrides,
  };
}

/** The demo entity as the registry builds it from that row. */
export function demoEntityInfo(code: string, overrides: Partial<RegistryRow> = {}): EntityInfo {
  return buildEntityInfo(demoRegistryRow(code, overrides), undefined);
}
