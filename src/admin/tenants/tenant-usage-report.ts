import { Inject, Injectable, Logger } from '@nestjs/common';
import { errorMessage } from '../../common/errors/error-message';
import { tenantPredicate } from '../../database/scope/tenant-rows';
import { EXPORT_STORE, type ExportStore } from '../../dataview/download/export-store';
import { TenantUsageService } from '../../tenant/tenant-usage.service';
import type { TenantUsageDto } from './tenant-lifecycle.api-docs';
import { TenantEntities } from './tenant-entities';
import { TenantRecords, type Row } from './tenant-records';

/** What a tenant uses (D58): requests, rows per entity, jobs, deliveries and stored bytes. */
@Injectable()
export class TenantUsageReport {
  private readonly logger = new Logger('TenantUsage');

  constructor(
    private readonly records: TenantRecords,
    private readonly entities: TenantEntities,
    private readonly usageCounter: TenantUsageService,
    @Inject(EXPORT_STORE) private readonly exports: ExportStore,
  ) {}

  async usage(id: string): Promise<TenantUsageDto> {
    const tenant = await this.records.tenant(id);
    const rows: Record<string, number> = {};
    for (const entity of await this.entities.of(tenant.id)) {
      try {
        const where = tenantPredicate(`e.${entity.tenantColumn}`, 'STRICT', tenant.id);
        const row = await entity.ds
          .createQueryBuilder()
          .select('COUNT(*)', 'n')
          .from(entity.table, 'e')
          .where(where.sql, where.params)
          .getRawOne<Row>();
        rows[entity.code] = Number(row?.n ?? 0);
      } catch (err) {
        this.logger.warn(
          { tenantId: tenant.id, entity: entity.code, err: errorMessage(err) },
          'Usage: rows not counted',
        );
      }
    }
    return {
      tenantId: tenant.id,
      code: tenant.code,
      requests: await this.usageCounter.requests(tenant.id),
      rows,
      exports: { jobs: await this.jobs(tenant.id, 'export') },
      imports: { jobs: await this.jobs(tenant.id, 'import') },
      deliveries: await this.deliveries(tenant.id),
      stored: await this.exports.usage(tenant.id),
    };
  }

  /** Webhook deliveries kept (D54): all, and the dead ones among them. */
  private async deliveries(tenantId: string): Promise<{ total: number; dead: number }> {
    const tenant = tenantPredicate('d.whd_tenant_id', 'STRICT', tenantId);
    const rows = await this.records.ds
      .createQueryBuilder()
      .select('d.whd_status', 'status')
      .addSelect('COUNT(*)', 'n')
      .from('app_webhook_deliveries', 'd')
      .where(tenant.sql, tenant.params)
      .groupBy('d.whd_status')
      .getRawMany<Row>();
    const total = rows.reduce((n, r) => n + Number(r.n), 0);
    const dead = rows.filter((r) => r.status === 'DEAD').reduce((n, r) => n + Number(r.n), 0);
    return { total, dead };
  }

  private async jobs(tenantId: string, kind: string): Promise<number> {
    const tenant = tenantPredicate('j.job_tenant_id', 'STRICT', tenantId);
    const row = await this.records.ds
      .createQueryBuilder()
      .select('COUNT(*)', 'n')
      .from('app_jobs', 'j')
      .where(tenant.sql, tenant.params)
      .andWhere('j.job_kind = :kind', { kind })
      .getRawOne<Row>();
    return Number(row?.n ?? 0);
  }
}
