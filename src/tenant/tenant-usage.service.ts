import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { errorMessage } from '../common/errors/error-message';
import type { AppConfig } from '../config/config.schema';
import { InjectConfig } from '../config/inject-config.decorator';
import { DatabaseService } from '../database/database.service';
import { tenantPredicate } from '../database/scope/tenant-rows';
import { isUniqueViolation } from '../database/dialect/constraint-errors';

const TABLE = 'app_tenant_usage';
const HOUR_MS = 3_600_000;
/** Hours kept: the usage route answers the last 30 days. */
const KEEP_HOURS = 31 * 24;

export interface RequestCounts {
  last24h: number;
  last30d: number;
}

/**
 * Requests per tenant (D58 usage). Counting is one map increment in TenantGuard; every
 * TENANT_USAGE_FLUSH_MS the counts are added to `app_tenant_usage` (one row per tenant and hour,
 * shared by every instance: an UPDATE adding the count, an INSERT when the hour has no row yet).
 * A failed flush keeps its counts for the next one; the last flush runs at shutdown.
 */
@Injectable()
export class TenantUsageService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('TenantUsage');
  /** `${tenantId}:${hour}` → requests not yet flushed. */
  private pending = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;

  constructor(
    private readonly database: DatabaseService,
    @InjectConfig() private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    this.timer = setInterval(() => void this.flush(), this.config.tenantUsageFlushMs);
    this.timer.unref();
  }

  async onModuleDestroy(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.flush();
  }

  count(tenantId: string, nowMs = Date.now()): void {
    const key = `${tenantId}:${Math.floor(nowMs / HOUR_MS)}`;
    this.pending.set(key, (this.pending.get(key) ?? 0) + 1);
  }

  /** Adds the pending counts to the table; one flush at a time. */
  flush(): Promise<void> {
    this.flushing ??= this.flushNow().finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  private async flushNow(): Promise<void> {
    if (this.pending.size === 0 || !this.database.dataSource?.isInitialized) return;
    const batch = this.pending;
    this.pending = new Map();
    for (const [key, n] of batch) {
      const [tenantId, hour] = key.split(':').map(Number);
      try {
        await this.add(tenantId, hour, n);
      } catch (err) {
        this.pending.set(key, (this.pending.get(key) ?? 0) + n);
        this.logger.warn(
          { err: errorMessage(err) },
          'Tenant usage could not be written; kept for the next flush',
        );
        return;
      }
    }
    await this.database.dataSource
      .createQueryBuilder()
      .delete()
      .from(TABLE)
      .where('tnu_hour < :oldest', { oldest: Math.floor(Date.now() / HOUR_MS) - KEEP_HOURS })
      .execute()
      .catch(() => undefined);
  }

  private async add(tenantId: number, hour: number, n: number): Promise<void> {
    const ds = this.database.dataSource;
    const update = () =>
      ds
        .createQueryBuilder()
        .update(TABLE)
        .set({ tnu_requests: () => `tnu_requests + ${Math.trunc(n)}` })
        .where('tnu_tenant_id = :tenantId AND tnu_hour = :hour', { tenantId, hour })
        .execute();
    if (((await update()).affected ?? 0) > 0) return;
    try {
      await ds
        .createQueryBuilder()
        .insert()
        .into(TABLE, ['tnu_tenant_id', 'tnu_hour', 'tnu_requests'])
        .values({ tnu_tenant_id: tenantId, tnu_hour: hour, tnu_requests: n })
        .execute();
    } catch (err) {
      // Another instance inserted the hour's row first: add to it.
      if (!isUniqueViolation(err)) throw err;
      await update();
    }
  }

  /** A tenant's requests in the last 24 hours and 30 days (flushed counts plus this instance's). */
  async requests(tenantId: string, nowMs = Date.now()): Promise<RequestCounts> {
    const hour = Math.floor(nowMs / HOUR_MS);
    const tenant = tenantPredicate('u.tnu_tenant_id', 'STRICT', tenantId);
    const rows = await this.database.dataSource
      .createQueryBuilder()
      .select('u.tnu_hour', 'hour')
      .addSelect('u.tnu_requests', 'n')
      .from(TABLE, 'u')
      .where(tenant.sql, tenant.params)
      .andWhere('u.tnu_hour > :from', { from: hour - 30 * 24 })
      .getRawMany<{ hour: number | string; n: number | string }>();
    const counts: RequestCounts = { last24h: 0, last30d: 0 };
    const add = (h: number, n: number) => {
      counts.last30d += n;
      if (h > hour - 24) counts.last24h += n;
    };
    for (const r of rows) add(Number(r.hour), Number(r.n));
    for (const [key, n] of this.pending) {
      const [t, h] = key.split(':');
      if (t === String(Number(tenantId)) && Number(h) > hour - 30 * 24) add(Number(h), n);
    }
    return counts;
  }
}
