import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import type archiverModule from 'archiver';
import { lazyModule } from '../../common/lazy-module';
import { once } from 'node:events';
import { Readable, type Writable } from 'node:stream';
import type { DataSource } from 'typeorm';
import { AuthorizationError } from '../../common/errors/app-error';
import { DatabaseService } from '../../database/database.service';
import { TENANT_OWNED_TABLES } from '../../database/schema/tenant-owned';
import { tenantPredicate } from '../../database/scope/tenant-rows';
import { EXPORT_STORE, type ExportStore } from '../../dataview/download/export-store';
import type { ClaimedJob, JobHandler, JobRun } from '../../jobs/job.types';
import { JobWorker } from '../../jobs/job-worker';
import { isSystemAdmin } from '../../profile/access/permissions';
import { RecordContextFactory } from '../../records/record-context.factory';
import { TenantEntities, type TenantEntityTable } from './tenant-entities';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on the first tenant export
const archiver = lazyModule<typeof archiverModule>(() => require('archiver'));

export const TENANT_EXPORT_KIND = 'tenant.export';
const BATCH = 500;

/**
 * Columns never exported: secrets, even encrypted ones (a password hash, a connection string, a
 * webhook signing secret). An entity's hidden registry fields are left out the same way.
 */
const SECRET_COLUMNS: Readonly<Record<string, readonly string[]>> = {
  app_users: ['usr_password_hash'],
  app_connections: ['con_connection_string'],
  app_webhooks: ['whk_secret'],
};

export interface TenantExportInput {
  targetTenantId: string;
}

export interface TenantExportResult {
  filename: string;
  downloadUrl: string;
  /** Rows written per file of the archive. */
  files: Record<string, number>;
}

interface Source {
  file: string;
  ds: DataSource;
  table: string;
  key: string;
  tenantColumn: string;
  omit: readonly string[];
}

/**
 * The tenant export (D58) as a job: a ZIP of every row of one tenant — its tenant row, every table
 * of the configuration database with a tenant column, and its rows of every entity table on every
 * connection — one JSON-lines file per table. The archive is streamed into the export store while
 * the rows are read page by page (keyset on the table's key), so memory stays bounded whatever the
 * tenant's size; the job's progress is the number of rows written. The job belongs to the
 * administrator's tenant (only it can read the job and download the file), and it acts as that
 * administrator as the database has them now: a user who lost `admin:system` meanwhile fails it.
 */
@Injectable()
export class TenantExportJob implements JobHandler, OnModuleInit {
  private readonly logger = new Logger('TenantExport');
  readonly kind = TENANT_EXPORT_KIND;
  readonly concurrency = 1;
  readonly maxAttempts = 3;

  constructor(
    private readonly worker: JobWorker,
    private readonly database: DatabaseService,
    private readonly contexts: RecordContextFactory,
    private readonly entities: TenantEntities,
    @Inject(EXPORT_STORE) private readonly store: ExportStore,
  ) {}

  onModuleInit(): void {
    this.worker.register(this);
  }

  async run(job: ClaimedJob, run: JobRun): Promise<TenantExportResult> {
    const { targetTenantId } = job.input as TenantExportInput;
    if (job.createdBy === null) throw new AuthorizationError('The export has no user to act as');
    const actor = await this.contexts.actorFromIds({
      tenantId: job.tenantId,
      userId: job.createdBy,
      requestId: job.requestId ?? `job-${job.id}`,
    });
    if (!isSystemAdmin(actor.user.permissions))
      throw new AuthorizationError('Permission admin:system required');

    const ds = this.database.dataSource;
    const tenantRow = await ds
      .createQueryBuilder()
      .select('t.tnt_tenant_code', 'code')
      .from('app_tenants', 't')
      .where('t.tnt_id = :id', { id: Number(targetTenantId) })
      .getRawOne<{ code: string }>();
    const code = tenantRow?.code ?? targetTenantId;
    const sources: Source[] = [
      {
        file: 'app_tenants.jsonl',
        ds,
        table: 'app_tenants',
        key: 'tnt_id',
        tenantColumn: 'tnt_id',
        omit: [],
      },
      ...TENANT_OWNED_TABLES.map((t) => ({
        file: `${t.table}.jsonl`,
        ds,
        table: t.table,
        key: `${t.prefix}_id`,
        tenantColumn: `${t.prefix}_tenant_id`,
        omit: SECRET_COLUMNS[t.table] ?? [],
      })),
      ...(await this.entities.of(targetTenantId)).map((e: TenantEntityTable) => ({
        file: `entities/${e.code}.jsonl`,
        ds: e.ds,
        table: e.table,
        key: e.primaryKeyColumn,
        tenantColumn: e.tenantColumn,
        omit: e.hiddenColumns,
      })),
    ];
    const files: Record<string, number> = {};
    let written = 0;
    const filename = `tenant-${code}-${new Date().toISOString().slice(0, 10)}.zip`;
    const fileId = await this.store.save(
      {
        tenantId: job.tenantId,
        createdBy: job.createdBy,
        filename,
        contentType: 'application/zip',
        // A system administrator's file: only admin:system downloads it (issue 34).
        kind: 'tenant-export',
      },
      async (out: Writable) => {
        const zip = archiver()('zip', { zlib: { level: 6 } });
        const failed = new Promise<never>((_, reject) => zip.on('error', reject));
        failed.catch(() => undefined);
        zip.pipe(out);
        for (const source of sources) {
          files[source.file] = 0;
          const lines = async function* (this: TenantExportJob) {
            for await (const row of this.rows(source, targetTenantId, run.signal)) {
              files[source.file]++;
              written++;
              if (written % 1000 === 0) await run.progress(written, null);
              yield `${JSON.stringify(row)}\n`;
            }
          }.call(this);
          zip.append(Readable.from(lines), { name: source.file });
        }
        const finished = once(out, 'finish');
        await Promise.race([zip.finalize(), failed]);
        await Promise.race([finished, failed]);
      },
    );
    await run.progress(written, written);
    this.logger.log(
      { event: 'tenant_exported', tenantId: targetTenantId, by: job.createdBy, rows: written, jobId: job.id },
      'tenant_exported',
    );
    return { filename, downloadUrl: `/api/v1/downloads/${fileId}`, files };
  }

  /** The tenant's rows of one table, page by page on its key; secret columns left out. */
  private async *rows(
    source: Source,
    tenantId: string,
    signal: AbortSignal,
  ): AsyncGenerator<Record<string, unknown>> {
    let after: number | null = null;
    const tenant = tenantPredicate(`t.${source.tenantColumn}`, 'STRICT', tenantId);
    for (;;) {
      if (signal.aborted) throw signal.reason;
      const qb = source.ds
        .createQueryBuilder()
        .select('t.*')
        .from(source.table, 't')
        .where(tenant.sql, tenant.params)
        .orderBy(`t.${source.key}`, 'ASC')
        .limit(BATCH);
      if (after !== null) qb.andWhere(`t.${source.key} > :after`, { after });
      const page = await qb.getRawMany<Record<string, unknown>>();
      for (const row of page) {
        for (const column of source.omit) delete row[column];
        yield row;
      }
      if (page.length < BATCH) return;
      after = Number(page[page.length - 1][source.key]);
    }
  }
}
