import { Injectable } from '@nestjs/common';
import { DatabaseService } from '../database/database.service';

export interface TenantRow {
  id: string;
  code: string;
  name: string;
  description: string | null;
  status: number;
  isDeleted: boolean;
  features: Record<string, boolean>;
  addDtls: Record<string, unknown>;
}

export function parseJsonObject(value: unknown): Record<string, unknown> {
  if (typeof value !== 'string' || value === '') return {};
  try {
    const parsed: unknown = JSON.parse(value);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

/** Database bit/boolean/tinyint to boolean, whatever the driver returns. */
export function toBool(value: unknown): boolean {
  return value === true || value === 1 || value === '1' || value === 't' || value === 'true';
}

/** Queries of app_tenants. */
@Injectable()
export class TenantsRepository {
  constructor(private readonly database: DatabaseService) {}

  async findById(id: string): Promise<TenantRow | undefined> {
    return this.findOne('t.tnt_id = :id', { id: Number(id) });
  }

  /**
   * D56: every tenant's own audit retention (`tnt_add_dtls.auditRetentionDays`, a whole number of
   * days, 0 = forever), deleted tenants included; tenants without a valid one are left out.
   */
  async auditRetentionOverrides(): Promise<Array<{ tenantId: number; days: number }>> {
    const rows = await this.database.dataSource
      .createQueryBuilder()
      .select(['t.tnt_id AS id', 't.tnt_add_dtls AS add_dtls'])
      .from('app_tenants', 't')
      .where('t.tnt_add_dtls IS NOT NULL')
      .getRawMany<Record<string, unknown>>();
    const out: Array<{ tenantId: number; days: number }> = [];
    for (const row of rows) {
      const days = parseJsonObject(row.add_dtls).auditRetentionDays;
      if (typeof days === 'number' && Number.isSafeInteger(days) && days >= 0)
        out.push({ tenantId: Number(row.id), days });
    }
    return out;
  }

  private async findOne(where: string, params: Record<string, unknown>): Promise<TenantRow | undefined> {
    const row = await this.database.dataSource
      .createQueryBuilder()
      .select([
        't.tnt_id AS id',
        't.tnt_tenant_code AS code',
        't.tnt_tenant_name AS name',
        't.tnt_description AS description',
        't.tnt_status AS status',
        't.tnt_is_deleted AS is_deleted',
        't.tnt_features AS features',
        't.tnt_add_dtls AS add_dtls',
      ])
      .from('app_tenants', 't')
      .where(where, params)
      .getRawOne<Record<string, unknown>>();
    if (!row) return undefined;
    const features = parseJsonObject(row.features);
    return {
      id: String(row.id),
      code: String(row.code),
      name: String(row.name),
      description: (row.description as string | null) ?? null,
      status: Number(row.status),
      isDeleted: toBool(row.is_deleted),
      features: Object.fromEntries(Object.entries(features).map(([k, v]) => [k, v !== false])),
      addDtls: parseJsonObject(row.add_dtls),
    };
  }
}

export function isTenantActive(t: TenantRow): boolean {
  return t.status === 1 && !t.isDeleted;
}
