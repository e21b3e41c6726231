import { Injectable } from '@nestjs/common';
import { ConnectionsService } from '../database/connections/connections.service';
import type { EntityPolicy } from '../profile/policy/policy.model';
import type { EntityInfo, FieldDef } from '../registry/registry.types';
import { applyListQuery, col, ListQuery, QueryContext, scoped, selectFields } from './entity-query';

export type Row = Record<string, unknown>;

/** Queries of registered entity tables; every one starts from the tenant-scoped builder. */
@Injectable()
export class EntityRepository {
  constructor(private readonly connections: ConnectionsService) {}

  /** D3: the entity's connection (the configuration database for null / 'default'). */
  private dsFor(entity: EntityInfo, ctx: QueryContext) {
    return this.connections.dataSourceFor(entity.connectionCode, ctx.tenantId);
  }

  async list(
    entity: EntityInfo,
    policy: EntityPolicy,
    ctx: QueryContext,
    fields: FieldDef[],
    filterable: Set<string>,
    query: ListQuery,
  ): Promise<{ rows: Row[]; total: number }> {
    const ds = this.dsFor(entity, ctx);
    const base = scoped(ds, entity, policy, ctx);
    applyListQuery(ds, base, entity, filterable, query);
    const countQb = base.clone().orderBy().select('COUNT(*)', 'total');
    const pageQb = base.clone();
    selectFields(ds, pageQb, fields);
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
    const ds = this.dsFor(entity, ctx);
    const qb = scoped(ds, entity, policy, ctx).andWhere(`${col(ds, entity.primaryKeyColumn)} = :__id`, {
      __id: id,
    });
    selectFields(ds, qb, fields);
    return qb.getRawOne<Row>();
  }
}
