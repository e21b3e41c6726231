import { Inject, Injectable, Logger } from '@nestjs/common';
import { CacheService } from '../../cache/cache.service';
import { CacheClearService } from '../../catalog/cache-clear.service';
import { ConflictError, ValidationError } from '../../common/errors/app-error';
import { errorMessage } from '../../common/errors/error-message';
import type { Actor } from '../../common/request-context';
import { isForeignKeyViolation } from '../../database/dialect/constraint-errors';
import { toDbTimestamp } from '../../database/dialect/timestamps';
import { TENANT_OWNED_TABLES } from '../../database/schema/tenant-owned';
import { tenantPredicate } from '../../database/scope/tenant-rows';
import { EXPORT_STORE, type ExportStore } from '../../dataview/download/export-store';
import { TenantJobs } from '../../jobs/tenant-jobs';
import type { ErasedTenantDto } from './tenant-lifecycle.api-docs';
import { TenantEntities } from './tenant-entities';
import { TenantRecords, type TenantRecord } from './tenant-records';

/** Erasing a tenant (D58): its data deleted, its configuration and users archived, its id kept. */
@Injectable()
export class TenantEraser {
  private readonly logger = new Logger('TenantErase');

  constructor(
    private readonly records: TenantRecords,
    private readonly entities: TenantEntities,
    private readonly cache: CacheService,
    private readonly clearing: CacheClearService,
    private readonly jobs: TenantJobs,
    @Inject(EXPORT_STORE) private readonly exports: ExportStore,
  ) {}

  /**
   * Erases a tenant (D58). The tenant row is marked deleted first (status -1), so from then on no
   * request names it; then its jobs are stopped, on every instance, and waited for (a running import
   * commits nothing more: TenantJobs); then its entity rows and operational rows are deleted and its
   * configuration and users archived. Every step is idempotent: an erase that stopped half-way is
   * finished by running it again.
   */
  async erase(actor: Actor, id: string, confirm: string): Promise<ErasedTenantDto> {
    const tenant = await this.records.tenant(id);
    if (confirm !== tenant.code)
      throw new ValidationError('Validation failed', [
        { field: 'confirm', error: 'must be the tenant code' },
      ]);
    if (tenant.id === actor.tenantId)
      throw new ConflictError('A tenant cannot erase itself', { id: 'own_tenant' }, 'illegal_state');
    const now = toDbTimestamp(Date.now());
    await this.records.ds
      .createQueryBuilder()
      .update('app_tenants')
      .set({ tnt_status: -1, tnt_is_deleted: true, tnt_last_modified: now })
      .where('tnt_id = :id', { id: Number(tenant.id) })
      .execute();
    await this.cache.delete([this.cache.keys.tenant(tenant.id)]);
    const jobs = await this.jobs.stop(tenant.id);
    if (jobs.stillHeld > 0)
      this.logger.warn({ tenantId: tenant.id, ...jobs }, 'Erase: a job of the tenant outlived its lease');
    const workflows = await this.cancelWorkflows(tenant.id, now);

    const entities = await this.eraseEntities(tenant);
    const deleted: Record<string, number> = {};
    const archived: Record<string, number> = {};
    for (const table of TENANT_OWNED_TABLES) {
      const p = table.prefix;
      const where = tenantPredicate(`${p}_tenant_id`, 'STRICT', tenant.id);
      if (table.kind === 'data') {
        const result = await this.records.ds
          .createQueryBuilder()
          .delete()
          .from(table.table)
          .where(where.sql, where.params)
          .execute();
        deleted[table.table] = result.affected ?? 0;
      } else {
        const result = await this.records.ds
          .createQueryBuilder()
          .update(table.table)
          .set({ [`${p}_status`]: -1, [`${p}_is_deleted`]: true, [`${p}_last_modified`]: now })
          .where(where.sql, where.params)
          .execute();
        archived[table.table] = result.affected ?? 0;
      }
    }
    const exportFiles = await this.exports.eraseTenant(tenant.id);
    await this.clearing
      .clear('all', tenant.id)
      .catch((err: unknown) =>
        this.logger.warn({ tenantId: tenant.id, err: errorMessage(err) }, 'Erase: cache keys not cleared'),
      );
    await this.cache.delete([this.cache.keys.tenant(tenant.id)]);
    await this.records.audit(
      actor,
      'tenant.erased',
      tenant.id,
      { code: tenant.code },
      { entities, deleted, archived, exportFiles },
    );
    this.logger.log(
      {
        event: 'tenant_erased',
        tenantId: tenant.id,
        code: tenant.code,
        by: actor.user.userId,
        workflowsCancelled: workflows,
      },
      'tenant_erased',
    );
    return { tenantId: tenant.id, code: tenant.code, entities, deleted, archived, exportFiles };
  }

  /**
   * Cancels the tenant's unfinished workflow instances before its entity rows go. A step commits
   * only while its instance is not final and its fencing counter unchanged (D49): the UPDATE waits
   * for a step that holds the instance row, whose write the entity delete then removes, and every
   * later step finds the instance final and writes nothing. Otherwise a step committing between the
   * entity delete and the instances' delete would leave its record behind.
   */
  private async cancelWorkflows(tenantId: string, now: unknown): Promise<number> {
    const where = tenantPredicate('wfi_tenant_id', 'STRICT', tenantId);
    const result = await this.records.ds
      .createQueryBuilder()
      .update('wft_instances')
      .set({ wfi_status: 'CANCELLED', wfi_step_seq: () => 'wfi_step_seq + 1', wfi_completed_at: now })
      .where(where.sql, where.params)
      .andWhere('wfi_status IN (:...live)', { live: ['PENDING', 'RUNNING', 'PAUSED'] })
      .execute();
    return result.affected ?? 0;
  }

  /**
   * Deletes the tenant's rows of every entity table. Tables that reference each other (orders →
   * customers) are deleted in passes: a table refused for a foreign key is tried again after the
   * others, until a pass deletes nothing new.
   */
  private async eraseEntities(tenant: TenantRecord): Promise<Record<string, number>> {
    const counts: Record<string, number> = {};
    let pending = await this.entities.of(tenant.id);
    for (let pass = 0; pending.length > 0 && pass <= pending.length; pass++) {
      const refused: typeof pending = [];
      let lastError: unknown;
      for (const entity of pending) {
        const where = tenantPredicate(entity.tenantColumn, 'STRICT', tenant.id);
        try {
          const result = await entity.ds
            .createQueryBuilder()
            .delete()
            .from(entity.table)
            .where(where.sql, where.params)
            .execute();
          counts[entity.code] = (counts[entity.code] ?? 0) + (result.affected ?? 0);
        } catch (err) {
          if (!isForeignKeyViolation(err)) throw err;
          refused.push(entity);
          lastError = err;
        }
      }
      if (refused.length === pending.length) throw lastError;
      pending = refused;
    }
    return counts;
  }
}
