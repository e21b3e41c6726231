import { Inject, Injectable, Logger } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import type { AppConfig } from '../../config/config.schema';
import { InjectConfig } from '../../config/inject-config.decorator';
import { storedSecretKeyRing } from '../../config/key-ring';
import { encryptConnectionString } from '../../database/connections/connection-string.crypto';
import type { DataSource, QueryRunner } from 'typeorm';
import { CacheService } from '../../cache/cache.service';
import { CacheClearService } from '../../catalog/cache-clear.service';
import { hashPassword } from '../../common/crypto/password';
import { ConflictError, NotFoundError, ValidationError } from '../../common/errors/app-error';
import { errorMessage } from '../../common/errors/error-message';
import type { Actor } from '../../common/request-context';
import { DatabaseService } from '../../database/database.service';
import { toDbTimestamp } from '../../database/dialect/timestamps';
import { TENANT_OWNED_TABLES, type TenantOwnedTable } from '../../database/schema/tenant-owned';
import { tenantPredicate } from '../../database/scope/tenant-rows';
import { EXPORT_STORE, type ExportStore } from '../../dataview/download/export-store';
import { TenantEntities } from './tenant-entities';
import { TenantUsageService } from '../../tenant/tenant-usage.service';
import { JobsService } from '../../jobs/jobs.service';
import type {
  CreatedTenantDto,
  CreateTenantDto,
  ErasedTenantDto,
  TenantExportJobDto,
  TenantExportStartedDto,
  TenantUsageDto,
} from './tenant-lifecycle.api-docs';
import { TENANT_EXPORT_KIND, type TenantExportResult } from './tenant-export.job';
import { isForeignKeyViolation, isUniqueViolation } from '../../database/dialect/constraint-errors';

type Row = Record<string, unknown>;

interface TenantRecord {
  id: string;
  code: string;
  deleted: boolean;
}

/**
 * The tenant lifecycle (D58), for a system administrator: create a tenant from a template, read
 * its usage, erase it. Every statement names the target tenant's id in its WHERE (the scope
 * module's predicate) or inserts rows carrying it, so no other tenant's row is read or changed.
 */
@Injectable()
export class TenantLifecycleService {
  private readonly logger = new Logger('TenantLifecycle');

  constructor(
    private readonly database: DatabaseService,
    private readonly entities: TenantEntities,
    private readonly cache: CacheService,
    private readonly clearing: CacheClearService,
    private readonly usageCounter: TenantUsageService,
    @Inject(EXPORT_STORE) private readonly exports: ExportStore,
    @InjectConfig() private readonly config: AppConfig,
    private readonly jobQueue: JobsService,
  ) {}

  // ---------------------------------------------------------------------------------------------
  // Export

  /** Queues the tenant export (D58): a job of the administrator's own tenant. */
  async startExport(actor: Actor, id: string): Promise<TenantExportStartedDto> {
    const tenant = await this.tenant(id);
    const job = await this.jobQueue.enqueue({
      tenantId: actor.tenantId,
      kind: TENANT_EXPORT_KIND,
      createdBy: actor.user.userId,
      requestId: actor.requestId,
      input: { targetTenantId: tenant.id },
    });
    const qr = this.ds.createQueryRunner();
    try {
      await this.audit(qr, actor, 'tenant.exported', tenant.id, null, { code: tenant.code, jobId: job.id });
    } finally {
      await qr.release();
    }
    return { jobId: job.id, status: job.status };
  }

  /** The export job, when it is one of the administrator's tenant and exports tenant `id`; else 404. */
  async exportJob(actor: Actor, id: string, jobId: number): Promise<TenantExportJobDto> {
    const job = await this.jobQueue.get(actor.tenantId, jobId, TENANT_EXPORT_KIND);
    const input = job.input as { targetTenantId?: string } | null;
    if (String(input?.targetTenantId) !== id) throw new NotFoundError(`Job ${jobId} not found`);
    const result = (job.status === 'COMPLETED' ? job.result : null) as TenantExportResult | null;
    return {
      jobId: job.id,
      tenantId: id,
      status: job.status,
      processed: job.processed,
      ...(result ? { filename: result.filename, downloadUrl: result.downloadUrl, files: result.files } : {}),
      ...(job.status === 'FAILED' && job.error
        ? { error: { code: job.error.code, message: job.error.message } }
        : {}),
    };
  }

  private get ds(): DataSource {
    return this.database.dataSource;
  }

  private async tenantByCode(code: string, qr?: QueryRunner): Promise<TenantRecord | undefined> {
    const row = await this.ds
      .createQueryBuilder(qr)
      .select('t.tnt_id', 'id')
      .addSelect('t.tnt_tenant_code', 'code')
      .addSelect('t.tnt_is_deleted', 'deleted')
      .from('app_tenants', 't')
      .where('t.tnt_tenant_code = :code', { code })
      .getRawOne<Row>();
    return row
      ? {
          id: String(row.id),
          code: String(row.code),
          deleted: Boolean(Number(row.deleted) || row.deleted === true),
        }
      : undefined;
  }

  /** The tenant `id`, erased or not; 404 when there is none. */
  async tenant(id: string): Promise<TenantRecord> {
    const row = await this.ds
      .createQueryBuilder()
      .select('t.tnt_id', 'id')
      .addSelect('t.tnt_tenant_code', 'code')
      .addSelect('t.tnt_is_deleted', 'deleted')
      .from('app_tenants', 't')
      .where('t.tnt_id = :id', { id: Number(id) })
      .getRawOne<Row>();
    if (!row) throw new NotFoundError('Tenant not found', { id: 'unknown_tenant' });
    return {
      id: String(row.id),
      code: String(row.code),
      deleted: Boolean(Number(row.deleted) || row.deleted === true),
    };
  }

  // ---------------------------------------------------------------------------------------------
  // Create

  async create(actor: Actor, dto: CreateTenantDto): Promise<CreatedTenantDto> {
    const qr = this.ds.createQueryRunner();
    await qr.connect();
    await qr.startTransaction();
    try {
      if (await this.tenantByCode(dto.code, qr))
        throw new ConflictError('A tenant with this code exists', { code: 'duplicate' }, 'duplicate_value');
      let template: TenantRecord | undefined;
      if (dto.template !== undefined) {
        template = await this.tenantByCode(dto.template, qr);
        if (!template || template.deleted)
          throw new ValidationError('Validation failed', [
            { field: 'template', error: 'unknown tenant code' },
          ]);
      }
      const now = toDbTimestamp(Date.now());
      await this.ds
        .createQueryBuilder(qr)
        .insert()
        .into('app_tenants', [
          'tnt_tenant_code',
          'tnt_tenant_name',
          'tnt_status',
          'tnt_is_deleted',
          'tnt_last_modified',
        ])
        .values({
          tnt_tenant_code: dto.code,
          tnt_tenant_name: dto.name,
          tnt_status: 1,
          tnt_is_deleted: false,
          tnt_last_modified: now,
        })
        .execute();
      const created = (await this.tenantByCode(dto.code, qr))!;
      const copied: Record<string, number> = {};
      if (template) {
        for (const table of TENANT_OWNED_TABLES.filter((t) => t.copied)) {
          copied[table.table] = await this.copyRows(qr, table, template, created, now);
        }
      }
      let adminUserId: number | undefined;
      if (dto.admin) adminUserId = await this.createAdmin(qr, created, dto.admin, now);
      await this.audit(qr, actor, 'tenant.created', created.id, null, {
        code: created.code,
        name: dto.name,
        template: template?.code ?? null,
        copied,
      });
      await qr.commitTransaction();
      this.logger.log(
        {
          event: 'tenant_created',
          tenantId: created.id,
          code: created.code,
          template: template?.code,
          by: actor.user.userId,
        },
        'tenant_created',
      );
      return {
        tenantId: created.id,
        code: created.code,
        copied,
        ...(adminUserId !== undefined ? { adminUserId } : {}),
      };
    } catch (err) {
      await qr.rollbackTransaction().catch(() => undefined);
      if (isUniqueViolation(err))
        throw new ConflictError('A tenant with this code exists', { code: 'duplicate' }, 'duplicate_value');
      throw err;
    } finally {
      await qr.release();
    }
  }

  /**
   * Copies the template's own live rows of one configuration table to the new tenant. Profile codes
   * are unique across tenants, so a copied profile's code gets the new tenant's code appended; a
   * dataview's page configuration id is mapped to the copied page of the same code.
   */
  private async copyRows(
    qr: QueryRunner,
    table: TenantOwnedTable,
    template: TenantRecord,
    created: TenantRecord,
    now: unknown,
  ): Promise<number> {
    const p = table.prefix;
    const tenant = tenantPredicate(`t.${p}_tenant_id`, 'STRICT', template.id);
    const rows = await this.ds
      .createQueryBuilder(qr)
      .select('t.*')
      .from(table.table, 't')
      .where(tenant.sql, tenant.params)
      .andWhere(`(t.${p}_is_deleted = :live OR t.${p}_is_deleted IS NULL)`, { live: false })
      .orderBy(`t.${p}_id`)
      .getRawMany<Row>();
    for (const source of rows) {
      const row: Row = { ...source };
      delete row[`${p}_id`];
      row[`${p}_tenant_id`] = Number(created.id);
      row[`${p}_last_modified`] = now;
      if (table.table === 'app_object_profiles')
        row.prf_code = `${String(row.prf_code)}_${created.code}`.slice(0, 100);
      if (table.table === 'app_webhooks') Object.assign(row, this.disabledWebhookCopy());
      if (table.table === 'app_dataview_configs' && row.dvc_page_config_id != null)
        row.dvc_page_config_id = await this.copiedPageId(qr, Number(row.dvc_page_config_id), created);
      await this.ds.createQueryBuilder(qr).insert().into(table.table, Object.keys(row)).values(row).execute();
    }
    return rows.length;
  }

  /**
   * A template's webhook comes over disabled (D58), with a secret of its own (never the
   * template's) and no delivery state: an administrator of the new tenant reads nothing of the
   * template's secret and enables the webhook once its receiver knows the new one (rotateSecret).
   */
  private disabledWebhookCopy(): Row {
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    return {
      whk_status: 0,
      whk_secret: encryptConnectionString(
        secret,
        storedSecretKeyRing(this.config.crypto),
        'mtb:app_webhooks:v1',
      ),
      whk_cursor: 0,
      whk_relay_owner: null,
      whk_relay_until: null,
      whk_failing_since: null,
      whk_disabled_reason: 'copied from the template tenant: rotate its secret, then enable it',
    };
  }

  private async copiedPageId(
    qr: QueryRunner,
    templatePageId: number,
    created: TenantRecord,
  ): Promise<number | null> {
    const page = await this.ds
      .createQueryBuilder(qr)
      .select('p.pgc_code', 'code')
      .from('app_page_configs', 'p')
      .where('p.pgc_id = :id', { id: templatePageId })
      .getRawOne<Row>();
    if (!page) return null;
    const tenant = tenantPredicate('p.pgc_tenant_id', 'STRICT', created.id);
    const copy = await this.ds
      .createQueryBuilder(qr)
      .select('p.pgc_id', 'id')
      .from('app_page_configs', 'p')
      .where(tenant.sql, tenant.params)
      .andWhere('p.pgc_code = :code', { code: page.code })
      .getRawOne<Row>();
    // A page of the system (not copied) keeps its id.
    return copy ? Number(copy.id) : templatePageId;
  }

  private async createAdmin(
    qr: QueryRunner,
    created: TenantRecord,
    admin: { email_id: string; password: string },
    now: unknown,
  ): Promise<number> {
    const tenant = tenantPredicate('r.rol_tenant_id', 'STRICT', created.id);
    const role = await this.ds
      .createQueryBuilder(qr)
      .select('r.rol_id', 'id')
      .from('app_roles', 'r')
      .where(tenant.sql, tenant.params)
      .andWhere('r.rol_code = :code', { code: 'ADMIN' })
      .getRawOne<Row>();
    if (!role)
      throw new ValidationError('Validation failed', [
        { field: 'admin', error: 'the new tenant has no ADMIN role (give a template that has one)' },
      ]);
    const email = admin.email_id.trim().toLowerCase();
    await this.ds
      .createQueryBuilder(qr)
      .insert()
      .into('app_users', [
        'usr_email_id',
        'usr_password_hash',
        'usr_role_id',
        'usr_tenant_id',
        'usr_status',
        'usr_is_deleted',
        'usr_last_modified',
      ])
      .values({
        usr_email_id: email,
        usr_password_hash: await hashPassword(admin.password),
        usr_role_id: Number(role.id),
        usr_tenant_id: Number(created.id),
        usr_status: 1,
        usr_is_deleted: false,
        usr_last_modified: now,
      })
      .execute();
    const tenantUsers = tenantPredicate('u.usr_tenant_id', 'STRICT', created.id);
    const user = await this.ds
      .createQueryBuilder(qr)
      .select('u.usr_id', 'id')
      .from('app_users', 'u')
      .where(tenantUsers.sql, tenantUsers.params)
      .andWhere('u.usr_email_id = :email', { email })
      .getRawOne<Row>();
    return Number(user?.id);
  }

  // ---------------------------------------------------------------------------------------------
  // Usage

  async usage(id: string): Promise<TenantUsageDto> {
    const tenant = await this.tenant(id);
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
    const rows = await this.ds
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
    const row = await this.ds
      .createQueryBuilder()
      .select('COUNT(*)', 'n')
      .from('app_jobs', 'j')
      .where(tenant.sql, tenant.params)
      .andWhere('j.job_kind = :kind', { kind })
      .getRawOne<Row>();
    return Number(row?.n ?? 0);
  }

  // ---------------------------------------------------------------------------------------------
  // Erase

  /**
   * Erases a tenant (D58). The tenant row is marked deleted first (status -1), so from then on no
   * request names it; then its entity rows and operational rows are deleted and its configuration
   * and users archived. Every step is idempotent: an erase that stopped half-way is finished by
   * running it again.
   */
  async erase(actor: Actor, id: string, confirm: string): Promise<ErasedTenantDto> {
    const tenant = await this.tenant(id);
    if (confirm !== tenant.code)
      throw new ValidationError('Validation failed', [
        { field: 'confirm', error: 'must be the tenant code' },
      ]);
    if (tenant.id === actor.tenantId)
      throw new ConflictError('A tenant cannot erase itself', { id: 'own_tenant' }, 'illegal_state');
    const now = toDbTimestamp(Date.now());
    await this.ds
      .createQueryBuilder()
      .update('app_tenants')
      .set({ tnt_status: -1, tnt_is_deleted: true, tnt_last_modified: now })
      .where('tnt_id = :id', { id: Number(tenant.id) })
      .execute();
    await this.cache.delete([this.cache.keys.tenant(tenant.id)]);

    const entities = await this.eraseEntities(tenant);
    const deleted: Record<string, number> = {};
    const archived: Record<string, number> = {};
    for (const table of TENANT_OWNED_TABLES) {
      const p = table.prefix;
      const where = tenantPredicate(`${p}_tenant_id`, 'STRICT', tenant.id);
      if (table.kind === 'data') {
        const result = await this.ds
          .createQueryBuilder()
          .delete()
          .from(table.table)
          .where(where.sql, where.params)
          .execute();
        deleted[table.table] = result.affected ?? 0;
      } else {
        const result = await this.ds
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
    const qr = this.ds.createQueryRunner();
    try {
      await this.audit(
        qr,
        actor,
        'tenant.erased',
        tenant.id,
        { code: tenant.code },
        { entities, deleted, archived, exportFiles },
      );
    } finally {
      await qr.release();
    }
    this.logger.log(
      { event: 'tenant_erased', tenantId: tenant.id, code: tenant.code, by: actor.user.userId },
      'tenant_erased',
    );
    return { tenantId: tenant.id, code: tenant.code, entities, deleted, archived, exportFiles };
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

  private async audit(
    qr: QueryRunner,
    actor: Actor,
    event: string,
    targetId: string,
    before: unknown,
    after: unknown,
  ): Promise<void> {
    await this.ds
      .createQueryBuilder(qr)
      .insert()
      .into('app_audit_logs', [
        'aud_tenant_id',
        'aud_user_id',
        'aud_event',
        'aud_entity_code',
        'aud_record_id',
        'aud_before',
        'aud_after',
        'aud_request_id',
        'aud_at',
      ])
      .values({
        aud_tenant_id: Number(actor.tenantId),
        aud_user_id: actor.user.userId,
        aud_event: event,
        aud_entity_code: 'tenants',
        aud_record_id: targetId,
        aud_before: before === null ? null : JSON.stringify(before),
        aud_after: JSON.stringify(after),
        aud_request_id: actor.requestId,
        aud_at: toDbTimestamp(Date.now()),
      })
      .execute();
  }
}
