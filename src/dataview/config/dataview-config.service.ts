import { Injectable, Logger } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { CacheService } from '../../cache/cache.service';
import { CACHE_TTL } from '../../cache/cache-keys';
import { NotFoundError } from '../../common/errors/app-error';
import { RegistryService } from '../../registry/registry.service';
import { actionsOf } from '../actions/action-config';
import { DataviewConfigRepository, DataviewConfigRow } from './dataview-config.repository';

/** A dataview as the service uses it: the winning row, its dvc_config parsed. */
export interface DataviewDefinition {
  id: number;
  /** Owner of the row; null for a system-wide row. */
  tenantId: string | null;
  code: string;
  description: string | null;
  /** dvc_source_entity: the registry code whose records the grid shows. */
  sourceEntity: string;
  /** dvc_config (spec §2.9.1), a JSON object. */
  config: Record<string, unknown>;
  /** A stable hash of what the config route serves: its ETag, and part of every cursor (stale cursors). */
  version: string;
}

/** The data of `GET /api/v1/dataviews/{code}/config` (spec §4.4, §2.9 variant B). */
export interface DataviewConfigAnswer {
  dvc_code: string;
  dvc_description: string | null;
  config: Record<string, unknown>;
}

/** Seconds an unknown code is remembered as unknown. */
export const DATAVIEW_NEGATIVE_TTL_S = 60;

/** Codes that can name a dataview (dvc_code is VARCHAR(256)); anything else is not looked up. */
const DATAVIEW_CODE = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,255}$/;
const TENANT_ID = /^\d{1,15}$/;

interface CachedCode {
  id: number | null;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isDefinition(value: unknown): value is DataviewDefinition {
  return (
    isObject(value) &&
    typeof value.id === 'number' &&
    typeof value.code === 'string' &&
    typeof value.sourceEntity === 'string' &&
    typeof value.version === 'string' &&
    isObject(value.config)
  );
}

export function configAnswer(def: DataviewDefinition): DataviewConfigAnswer {
  return { dvc_code: def.code, dvc_description: def.description, config: def.config };
}

/**
 * Dataview configuration rows (spec §2.9, §4.4, §8): the tenant's row over the system row, live and
 * active rows only, never another tenant's. Cached per tenant: the definition under
 * `{prefix}:dataview:{tenantId}:{id}` for CACHE_TTL.dataviewConfig (3600 s), and the code → id
 * lookup under `{prefix}:dataview-code:{tenantId}:{code}` for CACHE_TTL.dataviewCode (300 s;
 * unknown codes for 60 s), so a new tenant row takes over within five minutes. Cache failures fall
 * through to the database (CacheService).
 */
@Injectable()
export class DataviewConfigService {
  private readonly logger = new Logger('DataviewConfig');

  constructor(
    private readonly repository: DataviewConfigRepository,
    private readonly cache: CacheService,
    private readonly registry: RegistryService,
  ) {}

  /** The dataview `code` as tenant `tenantId` sees it; 404 NOT_FOUND when there is none. */
  async get(tenantId: string, code: string): Promise<DataviewDefinition> {
    const def = await this.find(tenantId, code);
    if (!def) throw new NotFoundError(`Dataview ${code} not found`);
    return def;
  }

  async find(tenantId: string, code: string): Promise<DataviewDefinition | undefined> {
    if (!TENANT_ID.test(tenantId) || !DATAVIEW_CODE.test(code)) return undefined;
    const codeKey = this.cache.keys.dataviewCode(tenantId, code);
    const cachedCode = await this.cache.getJson<CachedCode>(codeKey);
    if (isObject(cachedCode) && cachedCode.id === null) return undefined;
    if (isObject(cachedCode) && typeof cachedCode.id === 'number') {
      const cached = await this.cache.getJson<unknown>(
        this.cache.keys.dataviewConfig(tenantId, cachedCode.id),
      );
      if (isDefinition(cached) && cached.code === code) return cached;
      const row = await this.repository.findById(tenantId, cachedCode.id);
      if (row && row.dvc_code === code) return this.remember(tenantId, code, row);
    }
    const [row] = await this.repository.findCandidates(tenantId, code);
    return this.remember(tenantId, code, row);
  }

  private async remember(
    tenantId: string,
    code: string,
    row: DataviewConfigRow | undefined,
  ): Promise<DataviewDefinition | undefined> {
    const parsed = row ? this.definitionOf(row) : undefined;
    const def = parsed && (await this.actionsServable(tenantId, parsed)) ? parsed : undefined;
    if (def)
      await this.cache.setJson(
        this.cache.keys.dataviewConfig(tenantId, def.id),
        def,
        CACHE_TTL.dataviewConfig,
      );
    await this.cache.setJson(
      this.cache.keys.dataviewCode(tenantId, code),
      { id: def ? def.id : null } satisfies CachedCode,
      def ? CACHE_TTL.dataviewCode : DATAVIEW_NEGATIVE_TTL_S,
    );
    return def;
  }

  /**
   * D52: the bulk actions must name a known operation, and an update's `set` only fields the source
   * entity has; else the dataview cannot be served (logged, like a profile with a bad row filter).
   */
  private async actionsServable(tenantId: string, def: DataviewDefinition): Promise<boolean> {
    const entity = await this.registry.resolve(tenantId, def.sourceEntity);
    // An entity the service cannot serve (D26) has no fields to check against: its routes say 501.
    const { problems } = actionsOf(def.config, entity?.supported ? entity.fields : undefined);
    if (problems.length === 0) return true;
    this.logger.error(
      { dataviewId: def.id, code: def.code, tenantId, problems },
      'Dataview bulk actions are invalid; the dataview is treated as not found',
    );
    return false;
  }

  /** The row as a definition; a row whose dvc_config is not a JSON object cannot be served (logged). */
  private definitionOf(row: DataviewConfigRow): DataviewDefinition | undefined {
    let config: unknown;
    try {
      config = row.dvc_config === null ? null : JSON.parse(row.dvc_config);
    } catch {
      config = undefined;
    }
    if (!isObject(config)) {
      this.logger.error(
        { dataviewId: row.dvc_id, code: row.dvc_code },
        'Dataview configuration is not a JSON object; the dataview is treated as not found',
      );
      return undefined;
    }
    const served: DataviewConfigAnswer = {
      dvc_code: row.dvc_code,
      dvc_description: row.dvc_description,
      config,
    };
    const version = createHash('sha256')
      .update(JSON.stringify([row.dvc_id, row.dvc_source_entity, served]))
      .digest('base64url')
      .slice(0, 27);
    return {
      id: row.dvc_id,
      tenantId: row.dvc_tenant_id === null ? null : String(row.dvc_tenant_id),
      code: row.dvc_code,
      description: row.dvc_description,
      sourceEntity: row.dvc_source_entity,
      config,
      version,
    };
  }
}
