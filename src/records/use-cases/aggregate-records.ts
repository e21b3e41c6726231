import { Injectable } from '@nestjs/common';
import { assertCanPerform } from '../../profile/access/can-perform';
import type { DataSource, SelectQueryBuilder } from 'typeorm';
import { FieldError, ValidationError } from '../../common/errors/app-error';
import { queryPermissions } from '../presenter';
import {
  AggregateColumn,
  aggregateColumns,
  AggregateSpec,
  groupAllowed,
  groupKeyValue,
  KEY_ALIAS,
  selectGroups,
  selectTotals,
  totalsOf,
} from '../query/aggregates';
import { applyConditions } from '../query/conditions';
import type { QueryPermissions, RecordQuery } from '../query/record-query';
import { scoped } from '../query/select';
import type { RecordContext } from '../record-context';
import { RecordsReadRepository, Row } from '../records-read.repository';
import { readScope } from '../scope';

/** The filters and search of a query: what decides the set that aggregates and groups cover. */
export type FilteredQuery = Pick<RecordQuery, 'filters' | 'search'>;

export interface AggregateTotals {
  /** Rows in the filtered set. */
  count: number;
  /** Each aggregate by its name. */
  aggregates: Record<string, unknown>;
}

export interface RecordGroup {
  /** The group field's value (null for the rows where it is NULL). */
  key: unknown;
  count: number;
  aggregates: Record<string, unknown>;
}

export interface GroupsResult {
  /** Ordered by key, NULL last; at most `limit`. */
  groups: RecordGroup[];
  /** More groups exist than `limit`. */
  more: boolean;
}

/**
 * Aggregates and groups of a query's whole filtered set, not of a page (D47): the caller's read
 * scope (tenant, soft delete, row filter) from the one scope builder, then the query's filters and
 * search. Only fields the caller may filter on (visible and unmasked; a dataview narrows further)
 * can be aggregated or grouped; anything else is a 400 naming the aggregate or the group field.
 */
@Injectable()
export class AggregateRecords {
  constructor(private readonly repository: RecordsReadRepository) {}

  /** COUNT(*) and the aggregates over every row the query matches. */
  async totals(
    ctx: RecordContext,
    query: FilteredQuery,
    specs: readonly AggregateSpec[],
    permissions: QueryPermissions = queryPermissions(ctx.entity, ctx.policy),
  ): Promise<AggregateTotals> {
    assertCanPerform('read', ctx);
    const { ds, qb, columns } = this.filtered(ctx, permissions, query, specs, []);
    selectTotals(ds, qb, columns);
    return totalsOf(columns, await qb.getRawOne<Row>());
  }

  /** The groups of the rows the query matches by one field: key, count and the aggregates. */
  async groups(
    ctx: RecordContext,
    query: FilteredQuery,
    groupBy: { field: string; label?: string },
    specs: readonly AggregateSpec[],
    limit: number,
    permissions: QueryPermissions = queryPermissions(ctx.entity, ctx.policy),
  ): Promise<GroupsResult> {
    assertCanPerform('read', ctx);
    const errors: FieldError[] = [];
    const label = groupBy.label ?? 'groupBy';
    const field = ctx.entity.fields.find((f) => f.name === groupBy.field);
    if (!field || !permissions.filterable.has(groupBy.field))
      errors.push({
        field: label,
        error: 'unknown field, or a masked or hidden one, which cannot be grouped',
      });
    else if (!groupAllowed(field.type))
      errors.push({ field: label, error: `a ${field.type} field cannot be grouped` });
    if (!Number.isSafeInteger(limit) || limit < 1) throw new Error('A group query needs a positive limit');
    const { ds, qb, columns } = this.filtered(ctx, permissions, query, specs, errors);
    selectGroups(ds, qb, field!, columns, limit + 1);
    const rows = await qb.getRawMany<Row>();
    const groups = rows.slice(0, limit).map((raw) => {
      const { count, aggregates } = totalsOf(columns, raw);
      return { key: groupKeyValue(field!, raw[KEY_ALIAS]), count, aggregates };
    });
    return { groups, more: rows.length > limit };
  }

  /** The scoped, filtered statement and the resolved aggregates; 400 listing every problem. */
  private filtered(
    ctx: RecordContext,
    permissions: QueryPermissions,
    query: FilteredQuery,
    specs: readonly AggregateSpec[],
    errors: FieldError[],
  ): { ds: DataSource; qb: SelectQueryBuilder<Row>; columns: AggregateColumn[] } {
    const ds = this.repository.dataSourceFor(ctx.entity, ctx.tenantId);
    const qb = scoped(ds, ctx.entity, readScope(ctx, ctx.entity, ctx.policy));
    applyConditions(ds, qb, ctx.entity, permissions.filterable, query, errors);
    const columns = aggregateColumns(ctx.entity, permissions.filterable, specs, errors);
    if (errors.length > 0) throw new ValidationError('Invalid query', errors);
    return { ds, qb, columns };
  }
}
