import { Injectable } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { CacheService } from '../cache/cache.service';
import { CACHE_TTL } from '../cache/cache-keys';
import type { FastifyRequest } from 'fastify';
import { FieldError, NotFoundError, ValidationError } from '../common/errors/app-error';
import { applyProjection, filterableFields, visibleFields } from '../profile/policy/masking';
import { rowFilterVariables } from '../profile/policy/row-filter';
import type { FieldDef } from '../registry/registry.types';
import type { ListQuery } from './entity-query';
import { EntityRepository, Row } from './entity.repository';
import { fromDb } from './entity-values';
import './entity-request';

export interface ListResult {
  records: Row[];
  total: number;
  limit: number;
  skip: number;
  meta: { entityCode: string; retrievedAt: string };
}

/** What the entity guards resolved for this request. */
function chain(request: FastifyRequest) {
  const { entity, profile, user, tenant } = request;
  if (!entity || !profile || !user || !tenant) throw new Error('Entity request chain did not run');
  return { entity, policy: profile.policy, ctx: { tenantId: tenant.id, user } };
}

/** Read rules of spec §4.3; writes follow in the next increment. */
@Injectable()
export class EntityService {
  constructor(
    private readonly repository: EntityRepository,
    private readonly cache: CacheService,
  ) {}

  /** Parses `filters[field]`, `limit`, `skip`, `sortBy`, `sortOrder` (spec §4.3 style 2). */
  parseListQuery(request: FastifyRequest): ListQuery {
    const { profile } = request;
    const q = request.query as Record<string, unknown>;
    const errors: FieldError[] = [];
    const filters: Record<string, unknown> = {};
    const known = new Set(['limit', 'skip', 'sortBy', 'sortOrder', 'entity', 'ten_id']);
    for (const [key, value] of Object.entries(q)) {
      const m = /^filters\[([A-Za-z0-9_]{1,100})\]$/.exec(key);
      if (m) filters[m[1]] = Array.isArray(value) ? value[value.length - 1] : value;
      else if (!known.has(key)) errors.push({ field: key, error: 'unknown query parameter' });
    }
    const maxPageSize = profile?.policy.query.maxPageSize ?? 500;
    const int = (name: string, fallback: number, min: number, max: number): number => {
      const raw = q[name];
      if (raw === undefined || raw === '') return fallback;
      if (typeof raw !== 'string' || !/^\d{1,9}$/.test(raw) || Number(raw) < min || Number(raw) > max) {
        errors.push({ field: name, error: `must be an integer from ${min} to ${max}` });
        return fallback;
      }
      return Number(raw);
    };
    const limit = int(
      'limit',
      Math.min(profile?.policy.query.defaultPageSize ?? 100, maxPageSize),
      1,
      maxPageSize,
    );
    const skip = int('skip', 0, 0, 1_000_000_000);
    const sortOrder = q.sortOrder === undefined ? 'asc' : q.sortOrder;
    if (sortOrder !== 'asc' && sortOrder !== 'desc')
      errors.push({ field: 'sortOrder', error: 'must be asc or desc' });
    const sortBy = typeof q.sortBy === 'string' && q.sortBy !== '' ? q.sortBy : undefined;
    if (Object.keys(filters).length > 0 && profile && !profile.policy.query.allowAdhocFilters) {
      errors.push({ field: 'filters', error: 'ad-hoc filters are not allowed for this entity' });
    }
    if (errors.length > 0) throw new ValidationError('Invalid query', errors);
    return { filters, limit, skip, sortBy, sortOrder: sortOrder as 'asc' | 'desc' };
  }

  /**
   * D27: list results are cached for 300 s under `{prefix}:list:{tenantId}:{entityCode}:{hash}`.
   * The tenant is part of the key by construction; the hash covers the query, the profile version
   * and, when the row filter uses @user variables, those variables, so one user's filtered view is
   * never served to another. Writes drop the tenant's keys of the entity.
   */
  async list(request: FastifyRequest, query: ListQuery): Promise<ListResult> {
    const { entity, policy, ctx } = chain(request);
    const vars = policy.rowFilter ? rowFilterVariables(policy.rowFilter) : { tenant: false, userAttrs: [] };
    const hash = createHash('sha256')
      .update(
        JSON.stringify({
          query,
          profile: request.profile?.profile.prf_id,
          registry: entity.registryId,
          // A row filter with @user variables makes the result per user.
          user: vars.userAttrs.length > 0 ? ctx.user.userId : null,
        }),
      )
      .digest('hex')
      .slice(0, 32);
    const key = this.cache.keys.entityList(ctx.tenantId, entity.code, hash);
    const cached = await this.cache.getJson<ListResult>(key);
    if (cached) return cached;
    const result = await this.query(request, query);
    await this.cache.setJson(key, result, CACHE_TTL.entityList);
    return result;
  }

  private async query(request: FastifyRequest, query: ListQuery): Promise<ListResult> {
    const { entity, policy, ctx } = chain(request);
    const fields = visibleFields(policy, entity.fields).map((name) =>
      entity.fields.find((f) => f.name === name)!,
    );
    const filterable = new Set(filterableFields(policy, entity.fields));
    const { rows, total } = await this.repository.list(entity, policy, ctx, fields, filterable, query);
    return {
      records: rows.map((r) => this.present(r, fields, request)),
      total,
      limit: query.limit,
      skip: query.skip,
      meta: { entityCode: entity.code, retrievedAt: new Date().toISOString() },
    };
  }

  async get(request: FastifyRequest, idParam: string): Promise<Row> {
    const { entity, policy, ctx } = chain(request);
    if (!/^\d{1,10}$/.test(idParam)) throw new NotFoundError(`${entity.code} ${idParam} not found`);
    const fields = visibleFields(policy, entity.fields).map((name) =>
      entity.fields.find((f) => f.name === name)!,
    );
    const row = await this.repository.findById(entity, policy, ctx, fields, Number(idParam));
    if (!row) throw new NotFoundError(`${entity.code} ${idParam} not found`);
    return this.present(row, fields, request);
  }

  /** Driver values to JSON types, then projection and masking of the profile (read rule 6). */
  private present(row: Row, fields: FieldDef[], request: FastifyRequest): Row {
    const typed: Row = {};
    for (const f of fields) typed[f.name] = fromDb(f, row[f.name]);
    const { entity, policy } = chain(request);
    return applyProjection(typed, policy, entity.fields);
  }
}
