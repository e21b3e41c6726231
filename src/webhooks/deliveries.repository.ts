import { Injectable } from '@nestjs/common';
import { DatabaseService } from '../database/database.service';
import { toDbTimestamp } from '../database/dialect/timestamps';

const TABLE = 'app_webhook_deliveries';

/** app_webhook_deliveries (D54). */
@Injectable()
export class DeliveriesRepository {
  constructor(private readonly database: DatabaseService) {}

  private get ds() {
    return this.database.dataSource;
  }

  /** Removes delivered deliveries created before `before` (every tenant's; dead ones stay); how many. */
  async purgeDelivered(before: number, limit: number): Promise<number> {
    const ids = await this.ds
      .createQueryBuilder()
      .select('whd_id', 'id')
      .from(TABLE, 'd')
      .where('whd_status = :delivered AND whd_created_at < :before', {
        delivered: 'DELIVERED',
        before: toDbTimestamp(before),
      })
      .orderBy('whd_id', 'ASC')
      .limit(limit)
      .getRawMany<{ id: unknown }>();
    if (ids.length === 0) return 0;
    const result = await this.ds
      .createQueryBuilder()
      .delete()
      .from(TABLE)
      .where('whd_id IN (:...ids)', { ids: ids.map((r) => Number(r.id)) })
      .execute();
    return result.affected ?? ids.length;
  }
}
