import { Injectable, Logger } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import type { QueryRunner } from 'typeorm';
import { hashPassword } from '../../common/crypto/password';
import { ConflictError, ValidationError } from '../../common/errors/app-error';
import type { Actor } from '../../common/request-context';
import type { AppConfig } from '../../config/config.schema';
import { InjectConfig } from '../../config/inject-config.decorator';
import { storedSecretKeyRing } from '../../config/key-ring';
import { encryptConnectionString } from '../../database/connections/connection-string.crypto';
import { isUniqueViolation } from '../../database/dialect/constraint-errors';
import { toDbTimestamp } from '../../database/dialect/timestamps';
import { TENANT_OWNED_TABLES, type TenantOwnedTable } from '../../database/schema/tenant-owned';
import { tenantPredicate } from '../../database/scope/tenant-rows';
import { TenantLookupService } from '../../tenant/tenant-lookup.service';
import type { CreatedTenantDto, CreateTenantDto } from './tenant-lifecycle.api-docs';
import { TenantRecords, type Row, type TenantRecord } from './tenant-records';

/**
 * Creating a tenant (D58), for a system administrator: the tenant row, a copy of a template
 * tenant's own configuration, a first administrator, in one transaction. Every statement names
 * the template's or the new tenant's id (the scope module's predicate), so no other tenant's row
 * is read or changed. Usage, export and erase are the other parts of the lifecycle
 * (tenant-usage-report.ts, tenant-exports.ts, tenant-eraser.ts).
 */
@Injectable()
export class TenantLifecycleService {
  private readonly logger = new Logger('TenantLifecycle');

  constructor(
    private readonly records: TenantRecords,
    @InjectConfig() private readonly config: AppConfig,
    private readonly lookup: TenantLookupService,
  ) {}

  async create(actor: Actor, dto: CreateTenantDto): Promise<CreatedTenantDto> {
    const qr = this.records.ds.createQueryRunner();
    await qr.connect();
    await qr.startTransaction();
    try {
      if (await this.records.byCode(dto.code, qr))
        throw new ConflictError('A tenant with this code exists', { code: 'duplicate' }, 'duplicate_value');
      let template: TenantRecord | undefined;
      if (dto.template !== undefined) {
        template = await this.records.byCode(dto.template, qr);
        if (!template || template.deleted)
          throw new ValidationError('Validation failed', [
            { field: 'template', error: 'unknown tenant code' },
          ]);
      }
      const now = toDbTimestamp(Date.now());
      await this.records.ds
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
      const created = (await this.records.byCode(dto.code, qr))!;
      const copied: Record<string, number> = {};
      if (template) {
        for (const table of TENANT_OWNED_TABLES.filter((t) => t.copied)) {
          copied[table.table] = await this.copyRows(qr, table, template, created, now);
        }
      }
      let adminUserId: number | undefined;
      if (dto.admin) adminUserId = await this.createAdmin(qr, created, dto.admin, now);
      await this.records.audit(
        actor,
        'tenant.created',
        created.id,
        null,
        {
          code: created.code,
          name: dto.name,
          template: template?.code ?? null,
          copied,
        },
        qr,
      );
      await qr.commitTransaction();
      // A request for this id before it existed left a remembered miss: the tenant is found at once.
      await this.lookup.forget([created.id]);
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
    const rows = await this.records.ds
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
      await this.records.ds
        .createQueryBuilder(qr)
        .insert()
        .into(table.table, Object.keys(row))
        .values(row)
        .execute();
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
    const page = await this.records.ds
      .createQueryBuilder(qr)
      .select('p.pgc_code', 'code')
      .from('app_page_configs', 'p')
      .where('p.pgc_id = :id', { id: templatePageId })
      .getRawOne<Row>();
    if (!page) return null;
    const tenant = tenantPredicate('p.pgc_tenant_id', 'STRICT', created.id);
    const copy = await this.records.ds
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
    const role = await this.records.ds
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
    await this.records.ds
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
    const user = await this.records.ds
      .createQueryBuilder(qr)
      .select('u.usr_id', 'id')
      .from('app_users', 'u')
      .where(tenantUsers.sql, tenantUsers.params)
      .andWhere('u.usr_email_id = :email', { email })
      .getRawOne<Row>();
    return Number(user?.id);
  }
}
