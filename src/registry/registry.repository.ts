import { Injectable } from '@nestjs/common';
import { DatabaseService } from '../database/database.service';
import type { RegistryRow } from './registry-entity';
import { configRows, systemRowsFirst } from '../database/scope/tenant-rows';

const REGISTRY_TABLE = { table: 'app_object_registries', prefix: 'obj' };

const COLUMNS = [
  'obj_id',
  'obj_tenant_id',
  'obj_code',
  'obj_description',
  'obj_type_code',
  'obj_connection_code',
  'obj_payload',
  'obj_payload_object_name',
  'obj_payload_identifier',
  'obj_payload_column_prefix',
  'obj_payload_table',
  'obj_name',
  'obj_db_key',
  'obj_db_type',
  'obj_connection_id',
  'obj_add_dtls',
] as const satisfies ReadonlyArray<keyof RegistryRow>;

const STRING_COLUMNS = COLUMNS.filter(
  (c) => c !== 'obj_id' && c !== 'obj_tenant_id' && c !== 'obj_connection_id' && c !== 'obj_code',
);

const nullableNumber = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
function nullableString(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  if (Buffer.isBuffer(v)) return v.toString('utf8');
  // A driver that parses JSON columns itself: back to the text the rest of the module expects.
  return JSON.stringify(v);
}

function toRow(raw: Record<string, unknown>): RegistryRow {
  const row = {
    obj_id: Number(raw.obj_id),
    obj_tenant_id: nullableNumber(raw.obj_tenant_id),
    obj_code: String(raw.obj_code),
    obj_connection_id: nullableNumber(raw.obj_connection_id),
  } as RegistryRow;
  for (const c of STRING_COLUMNS)
    (row as unknown as Record<string, string | null>)[c] = nullableString(raw[c]);
  return row;
}

/** Queries of app_object_registries. */
@Injectable()
export class RegistryRepository {
  constructor(private readonly database: DatabaseService) {}

  /**
   * Spec §4.3 profile-loader rule 4 with D20: the live, active rows of a code among the system-wide
   * rows and the caller's tenant's rows only (never another tenant's); system rows first, then by id.
   */
  async findCandidates(tenantId: string, code: string): Promise<RegistryRow[]> {
    const rows = await this.liveRows(tenantId)
      .select(COLUMNS.map((c) => `r.${c} AS ${c}`))
      .andWhere('r.obj_code = :code', { code })
      .orderBy(systemRowsFirst('r', 'obj'), 'ASC')
      .addOrderBy('r.obj_id', 'ASC')
      .getRawMany<Record<string, unknown>>();
    // MariaDB's and SQL Server's default collations compare case-insensitively and ignore trailing
    // spaces: codes match exactly on every dialect.
    return rows.map(toRow).filter((r) => r.obj_code === code);
  }

  /** The distinct codes of the live, active rows the tenant can see (D20), sorted. */
  async listCodes(tenantId: string): Promise<string[]> {
    const rows = await this.liveRows(tenantId)
      .select('r.obj_code', 'obj_code')
      .distinct(true)
      .getRawMany<Record<string, unknown>>();
    return [...new Set(rows.map((r) => String(r.obj_code)))].sort();
  }

  private liveRows(tenantId: string) {
    return configRows(this.database.dataSource, REGISTRY_TABLE, 'r', tenantId);
  }
}
