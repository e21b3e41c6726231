import { errorMessage } from '../common/errors/error-message';
import { Logger } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { CollectionEventsService } from '../cache/collection-events';
import { CATALOG_SOURCE_TABLES } from '../catalog/profile-catalog.repository';
import type { AppConfig } from '../config/config.schema';
import { APP_CONFIG } from '../config/config.module';
import { DatabaseService } from '../database/database.service';
import { SYSTEM_ONLY } from '../database/scope/tenant-rows';
import { RegistryService } from '../registry/registry.service';
import { encryptTenantHeader } from '../tenant/tenant-header.crypto';
import { EntityCatalog, withEntities } from './entity-document';
import { documentConfig, finishDocument } from './openapi-document';
import { OpenApiCatalogRepository } from './openapi-catalog.repository';

/** Tables whose change (collection event, catalog reload) makes the entity part stale. */
const SOURCE_TABLES = new Set<string>([...CATALOG_SOURCE_TABLES, 'app_value_sets']);
/** A change made outside the service (no event) shows after at most this long. */
export const OPENAPI_MAX_AGE_MS = 60_000;

/**
 * The served document: the scanned base (built once) plus the registry's entities, rebuilt on the
 * first request after a catalog reload or a change of the registry, profiles or value sets (their
 * collection events), or after OPENAPI_MAX_AGE_MS. A catalog that cannot be read serves the base.
 */
export class OpenApiDocuments {
  private readonly logger = new Logger('OpenApi');
  private cached?: { doc: OpenAPIObject; generation: number; at: number };
  private building?: Promise<OpenAPIObject>;
  private generation = 0;

  constructor(
    readonly base: OpenAPIObject,
    private readonly loadCatalog: () => Promise<EntityCatalog>,
  ) {}

  /** Marks the entity part stale; the next request rebuilds it. */
  invalidate(): void {
    this.generation++;
  }

  async current(): Promise<OpenAPIObject> {
    const c = this.cached;
    if (c && c.generation === this.generation && Date.now() - c.at < OPENAPI_MAX_AGE_MS) return c.doc;
    this.building ??= this.build().finally(() => {
      this.building = undefined;
    });
    return this.building;
  }

  private async build(): Promise<OpenAPIObject> {
    const generation = this.generation;
    try {
      const doc = withEntities(this.base, await this.loadCatalog());
      this.cached = { doc, generation, at: Date.now() };
      return doc;
    } catch (err) {
      this.logger.warn(
        { err: errorMessage(err) },
        'OpenAPI: the entity catalog could not be read; serving the document without per-entity paths',
      );
      return this.cached?.doc ?? this.base;
    }
  }
}

/** The registry's system-wide entities (tenant rows override per tenant; the document shows the shared shape). */
async function loadCatalog(
  registry: RegistryService,
  repository: OpenApiCatalogRepository,
): Promise<EntityCatalog> {
  const codes = await registry.listCodes(SYSTEM_ONLY);
  const entities = (await Promise.all(codes.map((code) => registry.resolve(SYSTEM_ONLY, code)))).filter(
    (e): e is NonNullable<typeof e> => e !== undefined,
  );
  return { entities, valueSets: await repository.systemValueSets() };
}

/** Outside production only: ready-made tenant headers of the active tenants for Swagger UI's Authorize. */
export async function devHeaders(
  config: Pick<AppConfig, 'isProduction' | 'nodeEnv' | 'crypto'>,
  repository: Pick<OpenApiCatalogRepository, 'activeTenants'>,
): Promise<string> {
  if (config.isProduction) return '';
  const tenants = await repository.activeTenants(10);
  if (tenants.length === 0) return '';
  const key = config.crypto.tenantEncryptionKey;
  const lines = tenants.map(
    (t) => `- **${t.code}** (${t.name}, id ${t.id}):\n\n  \`${encryptTenantHeader(t.id, key)}\``,
  );
  return [
    '',
    '---',
    `**Development only (NODE_ENV=${config.nodeEnv}; never in production): ready-made \`x-tenant-id\` values.** ` +
      'Paste one into Authorize → `tenant`, call `signIn` (e.g. admin@acme.test and the demo password the ' +
      'start-up banner prints), then paste `data.token` into Authorize → `bearer`.',
    '',
    ...lines,
  ].join('\n');
}

/**
 * Swagger UI at /api-docs and the document at /api-docs/json (moved from bootstrap.ts). The UI's
 * copy carries, outside production, ready-made tenant headers; the JSON document never does.
 */
export function setupSwagger(app: NestFastifyApplication): void {
  const config = app.get<AppConfig>(APP_CONFIG);
  const base = finishDocument(SwaggerModule.createDocument(app, documentConfig()));
  const registry = app.get(RegistryService, { strict: false });
  const repository = new OpenApiCatalogRepository(app.get(DatabaseService, { strict: false }));
  const documents = new OpenApiDocuments(base, () => loadCatalog(registry, repository));
  app.get(CollectionEventsService, { strict: false }).onCollectionEvent((event) => {
    if (SOURCE_TABLES.has(event.entityCode)) documents.invalidate();
    return Promise.resolve();
  });
  SwaggerModule.setup('api-docs', app, base, {
    jsonDocumentUrl: 'api-docs/json',
    swaggerOptions: { persistAuthorization: true, displayOperationId: true },
    customSiteTitle: 'API documentation',
    patchDocumentOnRequest: async <TRequest>(req: TRequest) => {
      const doc = await documents.current();
      const url = (req as FastifyRequest).url;
      if (!url.includes('swagger-ui-init')) return doc;
      let extra = '';
      try {
        extra = await devHeaders(config, repository);
      } catch {
        extra = '';
      }
      return extra
        ? { ...doc, info: { ...doc.info, description: `${doc.info.description ?? ''}\n${extra}` } }
        : doc;
    },
  });
}
