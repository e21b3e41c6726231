import { Injectable } from '@nestjs/common';
import type { DataSource, QueryRunner } from 'typeorm';
import { NotFoundError } from '../../common/errors/app-error';
import type { Actor } from '../../common/request-context';
import { DatabaseService } from '../../database/database.service';
import { toDbTimestamp } from '../../database/dialect/timestamps';

export type Row = Record<string, unknown>;

/** A tenant as the lifecycle sees it: erased ones too. */
export interface TenantRecord {
  id: string;
  code: string;
  deleted: boolean;
}

/** What every part of the tenant lifecycle (D58) shares: finding a tenant, and its audit entries. */
@Injectable()
export class TenantRecords {
  constructor(private readonly database: DatabaseService) {}

  get ds(): DataSource {
    return this.database.dataSource;
  }

  /** The tenant with this code, erased or not; undefined when there is none. */
  async byCode(code: string, qr?: QueryRunner): Promise<TenantRecord | undefined> {
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

  /**
   * A lifecycle action's audit entry, in the administrator's own tenant (so that it outlives an
   * erase): entity code `tenants`, the target tenant's id as record id. In `qr`'s transaction when
   * given.
   */
  async audit(
    actor: Actor,
    event: string,
    targetId: string,
    before: unknown,
    after: unknown,
    qr?: QueryRunner,
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
