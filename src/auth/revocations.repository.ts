import { Injectable } from '@nestjs/common';
import type {
  DataSource,
  DeleteQueryBuilder,
  InsertQueryBuilder,
  QueryRunner,
  SelectQueryBuilder,
} from 'typeorm';
import { DatabaseService } from '../database/database.service';
import { REVOKED_TOKENS_TABLE } from '../database/schema';
import { fromDbTimestamp, toDbTimestamp } from '../database/dialect/timestamps';

const TABLE = REVOKED_TOKENS_TABLE.name;

/** A row of app_revoked_tokens (D46): one token (`jti`) or a user's tokens issued before `notBeforeMs`. */
export interface NewRevocation {
  tenantId: string;
  userId: number;
  jti: string | null;
  notBeforeMs: number | null;
  expiresAtMs: number;
  createdAtMs: number;
}

/**
 * The statements of RevocationsRepository, built on a DataSource (and runner) of the caller's, so
 * that their SQL can be printed and checked per dialect without running them. Every one is
 * restricted to a tenant, except the purge, which removes expired rows of every tenant.
 */
export const revocationQueries = {
  insert(ds: DataSource, row: NewRevocation, runner?: QueryRunner): InsertQueryBuilder<object> {
    const values = {
      rvk_tenant_id: Number(row.tenantId),
      rvk_user_id: row.userId,
      rvk_jti: row.jti,
      rvk_not_before: row.notBeforeMs === null ? null : toDbTimestamp(row.notBeforeMs),
      rvk_expires_at: toDbTimestamp(row.expiresAtMs),
      rvk_created_at: toDbTimestamp(row.createdAtMs),
    };
    // Without entity metadata the builder takes values in the order of the column list.
    return ds.createQueryBuilder(runner).insert().into(TABLE, Object.keys(values)).values(values);
  },

  tokenRevoked(ds: DataSource, tenantId: string, jti: string): SelectQueryBuilder<object> {
    return ds
      .createQueryBuilder()
      .select('r.rvk_id', 'id')
      .from(TABLE, 'r')
      .where('r.rvk_tenant_id = :tenantId', { tenantId: Number(tenantId) })
      .andWhere('r.rvk_jti = :jti', { jti });
  },

  /** The latest not_before among the user's user-wide rows that have not expired. */
  userNotBefore(ds: DataSource, tenantId: string, userId: number, nowMs: number): SelectQueryBuilder<object> {
    return ds
      .createQueryBuilder()
      .select('MAX(r.rvk_not_before)', 'not_before')
      .from(TABLE, 'r')
      .where('r.rvk_tenant_id = :tenantId', { tenantId: Number(tenantId) })
      .andWhere('r.rvk_user_id = :userId', { userId })
      .andWhere('r.rvk_not_before IS NOT NULL')
      .andWhere('r.rvk_expires_at > :now', { now: toDbTimestamp(nowMs) });
  },

  purgeExpired(ds: DataSource, nowMs: number): DeleteQueryBuilder<object> {
    return ds
      .createQueryBuilder()
      .delete()
      .from(TABLE)
      .where('rvk_expires_at <= :now', { now: toDbTimestamp(nowMs) });
  },
};

/** app_revoked_tokens in the configuration database (D46). */
@Injectable()
export class RevocationsRepository {
  constructor(private readonly database: DatabaseService) {}

  /**
   * Inserts a revocation, on `runner` when given (inside the caller's transaction; it must belong
   * to the configuration database), else on its own. Throws on failure, e.g. a second row for a jti.
   */
  async insert(row: NewRevocation, runner?: QueryRunner): Promise<void> {
    const ds = runner?.connection ?? this.database.dataSource;
    await revocationQueries.insert(ds, row, runner).execute();
  }

  async isTokenRevoked(tenantId: string, jti: string): Promise<boolean> {
    const row = await revocationQueries
      .tokenRevoked(this.database.dataSource, tenantId, jti)
      .getRawOne<{ id: unknown }>();
    return row !== undefined && row !== null;
  }

  /** Epoch ms before which the user's tokens are refused, or null. */
  async userNotBefore(tenantId: string, userId: number, nowMs = Date.now()): Promise<number | null> {
    const ds = this.database.dataSource;
    const row = await revocationQueries
      .userNotBefore(ds, tenantId, userId, nowMs)
      .getRawOne<{ not_before: unknown }>();
    return fromDbTimestamp(row?.not_before, ds.driver.options.type);
  }

  /** Deletes the rows whose tokens have all expired; the number deleted when the driver says. */
  async purgeExpired(nowMs = Date.now()): Promise<number | undefined> {
    const result = await revocationQueries.purgeExpired(this.database.dataSource, nowMs).execute();
    return result.affected ?? undefined;
  }
}
