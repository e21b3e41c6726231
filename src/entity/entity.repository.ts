import { Injectable } from '@nestjs/common';
import { DatabaseService } from '../database/database.service';
import type { EntityPolicy } from '../profile/policy/policy.model';
import type { EntityInfo, FieldDef } from '../registry/registry.types';
import { applyListQuery, col, ListQuery, QueryContext, scoped, selectFields } from './entity-query';

export type Row = Record<string, unknown>;

/** Queries of registered entity tables; every one starts from the tenant-scoped builder. */
@Injectable()
export class EntityRepository {
  constructor(private readonly database: DatabaseService) {}

  private get ds() {
    return this.database.dataSource;
  }

  async list(
    entity: EntityInfo,
    policy: EntityPolicy,
    ctx: QueryContext,
    fields: FieldDef[],
    filterable: Set<string>,
    query: ListQuery,
  ): Promise<{ rows: Row[]; total: number }> {
    const base = scoped(this.ds, entity, policy, ctx);
    applyListQuery(this.ds, base, entity, filterable, query);
    const countQb = base.clone().orderBy().select('COUNT(*)', 'total');
    const pageQb = base.clone();
    selectFields(this.ds, pageQb, fields);
    pageQb.offset(query.skip).limit(query.limit);
    const [rows, count] = await Promise.all([
      pageQb.getRawMany<Row>(),
      countQb.getRawOne<{ total: unknown }>(),
    ]);
    return { rows, total: Number(count?.total ?? 0) };
  }

  async findById(
    entity: EntityInfo,
    policy: EntityPolicy,
    ctx: QueryContext,
    fields: FieldDef[],
    id: number,
  ): Promise<Row | undefined> {
    const qb = scoped(this.ds, entity, policy, ctx).andWhere(
      `${col(this.ds, entity.primaryKeyColumn)} = :__id`,
      { __id: id },
    );
    selectFields(this.ds, qb, fields);
    return qb.getRawOne<Row>();
  }
}
