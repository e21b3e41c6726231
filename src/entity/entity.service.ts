import { Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { FieldError, NotFoundError, ValidationError } from '../common/errors/app-error';
import { applyProjection, filterableFields, visibleFields } from '../profile/policy/masking';
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
  constructor(private readonly repository: EntityRepository) {}

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

  async list(request: FastifyRequest, query: ListQuery): Promise<ListResult> {
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
