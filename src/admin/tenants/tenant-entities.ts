import { Injectable, Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { errorMessage } from '../../common/errors/error-message';
import { ConnectionsService } from '../../database/connections/connections.service';
import { TENANT_OWNED_TABLES } from '../../database/schema/tenant-owned';
import { RegistryService } from '../../registry/registry.service';

export interface TenantEntityTable {
  code: string;
  table: string;
  tenantColumn: string;
  primaryKeyColumn: string;
  /** Columns of hidden registry fields (never returned by the API: never exported either). */
  hiddenColumns: string[];
  ds: DataSource;
}

const CONFIG_TABLES = new Set(['app_tenants', ...TENANT_OWNED_TABLES.map((t) => t.table)]);

/**
 * The entity tables holding a tenant's rows (D58): every entity the registry knows for it (system
 * rows and its own) whose table is not a configuration table (users and roles live there and are
 * handled with the configuration), on its connection; one entry per table.
 */
@Injectable()
export class TenantEntities {
  private readonly logger = new Logger('TenantEntities');

  constructor(
    private readonly registry: RegistryService,
    private readonly connections: ConnectionsService,
  ) {}

  async of(tenantId: string): Promise<TenantEntityTable[]> {
    const out: TenantEntityTable[] = [];
    const seen = new Set<string>();
    for (const code of await this.registry.listCodes(tenantId)) {
      const info = await this.registry.resolve(tenantId, code);
      if (!info || !info.supported || CONFIG_TABLES.has(info.table)) continue;
      let ds: DataSource;
      try {
        ds = this.connections.dataSourceFor(info.connectionCode, tenantId);
      } catch (err) {
        this.logger.warn({ tenantId, entity: code, err: errorMessage(err) }, 'Entity connection unavailable');
        continue;
      }
      const key = `${info.connectionCode ?? ''}:${info.table}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push({
        code,
        table: info.table,
        tenantColumn: info.columns.tenant,
        primaryKeyColumn: info.primaryKeyColumn,
        hiddenColumns: info.fields.filter((f) => f.hidden).map((f) => f.column),
        ds,
      });
    }
    return out;
  }
}
