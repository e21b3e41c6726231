import { tenantPredicate } from '../../database/scope/tenant-rows';
import { errorMessage } from '../../common/errors/error-message';
import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { Readable, Writable } from 'node:stream';
import type { AppConfig } from '../../config/config.schema';
import { APP_CONFIG } from '../../config/config.module';
import { DatabaseService } from '../../database/database.service';
import { fromDbTimestamp, toDbTimestamp } from '../../database/dialect/timestamps';
import { EXPORT_FILES_TABLE } from '../../database/schema';
import { EXPORT_SWEEP_INTERVAL_MS } from './directory-export-store';
import {
  ExportStore,
  FILE_ID,
  OpenedExport,
  STORED_FILE_KINDS,
  StoredExportMeta,
  StoredFileKind,
} from './export-store';
import { discardStream } from './discard-stream';

const TABLE = EXPORT_FILES_TABLE.name;

function isKind(value: unknown): value is StoredFileKind {
  return STORED_FILE_KINDS.includes(value as StoredFileKind);
}
/** Raw bytes per chunk row (base64: 4/3 of it). */
export const EXPORT_CHUNK_BYTES = 384 * 1024;

interface MetaRow {
  tenant: number | string;
  created_by: number | string;
  kind: string | null;
  filename: string;
  content_type: string;
  expires_at: unknown;
  chunks: number | string;
}

/**
 * The shared store (D48, EXPORT_STORE=database): app_export_files in the configuration database,
 * so that any instance serves any download. Chunks are inserted as the renderer writes (one chunk
 * in memory), unservable (expires_at NULL) until the file is complete. Expired files, and files
 * left incomplete for longer than the TTL, are purged on access and by an unref'd hourly sweep.
 */
@Injectable()
export class DatabaseExportStore implements ExportStore, OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('Exports');
  private readonly ttlMs: number;
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly database: DatabaseService,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.ttlMs = config.exports.ttlS * 1000;
  }

  onModuleInit(): void {
    this.timer = setInterval(() => void this.sweep(), EXPORT_SWEEP_INTERVAL_MS);
    this.timer.unref();
  }

  onModuleDestroy(): void {
    if (this.timer) clearInterval(this.timer);
  }

  private get ds() {
    return this.database.dataSource;
  }

  async save(
    meta: Omit<StoredExportMeta, 'expiresAt'>,
    produce: (out: Writable) => Promise<void>,
  ): Promise<string> {
    const fileId = randomBytes(32).toString('base64url');
    const createdAt = toDbTimestamp(Date.now());
    let chunk = 0;
    let pending: Buffer[] = [];
    let size = 0;
    const flush = async () => {
      const values = {
        exf_file_id: fileId,
        exf_chunk: chunk++,
        exf_tenant_id: Number(meta.tenantId),
        exf_created_by: meta.createdBy,
        exf_kind: meta.kind ?? null,
        exf_filename: meta.filename,
        exf_content_type: meta.contentType,
        exf_data: Buffer.concat(pending).toString('base64'),
        exf_expires_at: null,
        exf_created_at: createdAt,
      };
      pending = [];
      size = 0;
      await this.ds.createQueryBuilder().insert().into(TABLE, Object.keys(values)).values(values).execute();
    };
    // The chunk insert in flight, awaited before a discarded export's chunks are removed: otherwise
    // it could land after the removal and leave an orphan chunk behind.
    let inFlight: Promise<void> = Promise.resolve();
    const flushThen = (callback: (err?: Error | null) => void) => {
      inFlight = flush();
      inFlight.then(() => callback(), callback);
    };
    const out = new Writable({
      write(data: Buffer, _encoding, callback) {
        pending.push(data);
        size += data.length;
        if (size < EXPORT_CHUNK_BYTES) return callback();
        flushThen(callback);
      },
      final(callback) {
        flushThen(callback);
      },
    });
    try {
      await produce(out);
      if (!out.writableFinished) await new Promise<void>((ok, fail) => out.end(ok).once('error', fail));
      await this.ds
        .createQueryBuilder()
        .update(TABLE)
        .set({ exf_expires_at: toDbTimestamp(Date.now() + this.ttlMs) })
        .where('exf_file_id = :fileId', { fileId })
        .execute();
      return fileId;
    } catch (err) {
      await discardStream(out);
      await inFlight.catch(() => undefined);
      await this.remove(fileId).catch(() => undefined);
      throw err;
    }
  }

  async open(tenantId: string, fileId: string, nowMs = Date.now()): Promise<OpenedExport | null> {
    if (!FILE_ID.test(fileId)) return null;
    const tenant = tenantPredicate('f.exf_tenant_id', 'STRICT', tenantId);
    const row = await this.ds
      .createQueryBuilder()
      .select('MIN(f.exf_tenant_id)', 'tenant')
      .addSelect('MIN(f.exf_created_by)', 'created_by')
      .addSelect('MIN(f.exf_kind)', 'kind')
      .addSelect('MIN(f.exf_filename)', 'filename')
      .addSelect('MIN(f.exf_content_type)', 'content_type')
      .addSelect('MIN(f.exf_expires_at)', 'expires_at')
      .addSelect('COUNT(*)', 'chunks')
      .from(TABLE, 'f')
      .where('f.exf_file_id = :fileId', { fileId })
      .andWhere(tenant.sql, tenant.params)
      .getRawOne<MetaRow>();
    // Another tenant's file counts no chunk: it is as unknown as a file that never existed.
    if (!row || Number(row.chunks) === 0) return null;
    const expires = fromDbTimestamp(row.expires_at, this.ds.options.type);
    if (expires === null) return null; // still being written
    if (expires <= nowMs) {
      await this.remove(fileId);
      return null;
    }
    const chunks = Number(row.chunks);
    const ds = this.ds;
    async function* body(): AsyncGenerator<Buffer> {
      for (let n = 0; n < chunks; n++) {
        const part = await ds
          .createQueryBuilder()
          .select('f.exf_data', 'data')
          .from(TABLE, 'f')
          .where('f.exf_file_id = :fileId AND f.exf_chunk = :n', { fileId, n })
          .andWhere(tenant.sql, tenant.params)
          .getRawOne<{ data: string | null }>();
        if (part?.data) yield Buffer.from(part.data, 'base64');
      }
    }
    return {
      meta: {
        tenantId,
        filename: row.filename,
        contentType: row.content_type,
        expiresAt: new Date(expires).toISOString(),
        createdBy: Number(row.created_by),
        ...(isKind(row.kind) ? { kind: row.kind } : {}),
      },
      body: Readable.from(body()),
    };
  }

  async purgeExpired(nowMs = Date.now()): Promise<number> {
    const result = await this.ds
      .createQueryBuilder()
      .delete()
      .from(TABLE)
      .where('exf_expires_at <= :now', { now: toDbTimestamp(nowMs) })
      .orWhere('(exf_expires_at IS NULL AND exf_created_at <= :stale)', {
        stale: toDbTimestamp(nowMs - this.ttlMs),
      })
      .execute();
    return result.affected ?? 0;
  }

  async usage(tenantId: string): Promise<{ files: number; bytes: number }> {
    const tenant = tenantPredicate('f.exf_tenant_id', 'STRICT', tenantId);
    const length = this.ds.options.type === 'mssql' ? 'LEN' : 'LENGTH';
    const row = await this.ds
      .createQueryBuilder()
      .select('COUNT(DISTINCT f.exf_file_id)', 'files')
      .addSelect(`SUM(${length}(f.exf_data))`, 'chars')
      .from(TABLE, 'f')
      .where(tenant.sql, tenant.params)
      .getRawOne<{ files: number | string | null; chars: number | string | null }>();
    // The chunks are base64 (ASCII): 3 bytes per 4 characters.
    return { files: Number(row?.files ?? 0), bytes: Math.floor((Number(row?.chars ?? 0) * 3) / 4) };
  }

  async eraseTenant(tenantId: string): Promise<number> {
    const tenant = tenantPredicate('exf_tenant_id', 'STRICT', tenantId);
    const files = await this.usage(tenantId);
    await this.ds.createQueryBuilder().delete().from(TABLE).where(tenant.sql, tenant.params).execute();
    return files.files;
  }

  private async sweep(): Promise<void> {
    try {
      const purged = await this.purgeExpired();
      if (purged > 0) this.logger.log({ event: 'exports_purged', purged }, 'exports_purged');
    } catch (err) {
      this.logger.warn({ err: errorMessage(err) }, 'Purging expired exports failed');
    }
  }

  private async remove(fileId: string): Promise<void> {
    await this.ds
      .createQueryBuilder()
      .delete()
      .from(TABLE)
      .where('exf_file_id = :fileId', { fileId })
      .execute();
  }
}
