import { errorMessage } from '../../common/errors/error-message';
import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { discardStream } from './discard-stream';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import type { AppConfig } from '../../config/config.schema';
import { APP_CONFIG } from '../../config/config.module';
import {
  ExportStore,
  FILE_ID,
  OpenedExport,
  STORED_FILE_KINDS,
  StoredExportMeta,
  StoredFileKind,
} from './export-store';

/** How often expired exports are swept, besides on access. */
export const EXPORT_SWEEP_INTERVAL_MS = 60 * 60 * 1000;

function isMeta(value: unknown): value is StoredExportMeta {
  const v = value as Record<string, unknown> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.tenantId === 'string' &&
    typeof v.filename === 'string' &&
    typeof v.contentType === 'string' &&
    typeof v.expiresAt === 'string' &&
    typeof v.createdBy === 'number' &&
    (v.kind === undefined || STORED_FILE_KINDS.includes(v.kind as StoredFileKind))
  );
}

/**
 * The embedded default store (D32): `config.exports.dir` (EXPORT_DIR, ./data/exports), each export
 * as `<id>.data` with `<id>.json` beside it (tenant, owner, kind, filename, content type, expiresAt). A file is
 * written as `<id>.part` and renamed when complete, its metadata written last, so a half-written
 * export is never served. Expired exports are purged on access and by an unref'd hourly sweep.
 */
@Injectable()
export class DirectoryExportStore implements ExportStore, OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('Exports');
  private readonly dir: string;
  private readonly ttlMs: number;
  private timer?: NodeJS.Timeout;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.dir = resolve(config.exports.dir);
    this.ttlMs = config.exports.ttlS * 1000;
  }

  onModuleInit(): void {
    this.timer = setInterval(() => void this.sweep(), EXPORT_SWEEP_INTERVAL_MS);
    this.timer.unref();
  }

  onModuleDestroy(): void {
    if (this.timer) clearInterval(this.timer);
  }

  async save(
    meta: Omit<StoredExportMeta, 'expiresAt'>,
    produce: (out: Writable) => Promise<void>,
  ): Promise<string> {
    await mkdir(this.dir, { recursive: true });
    const id = randomBytes(32).toString('base64url');
    const part = this.path(id, 'part');
    const out = createWriteStream(part, { flags: 'wx', mode: 0o600 });
    try {
      await once(out, 'open');
      await produce(out);
      if (!out.writableFinished) {
        out.end();
        await once(out, 'finish');
      }
      if (!out.closed) await once(out, 'close');
      await rename(part, this.path(id, 'data'));
      const stored: StoredExportMeta = {
        ...meta,
        expiresAt: new Date(Date.now() + this.ttlMs).toISOString(),
      };
      await writeFile(this.path(id, 'json'), JSON.stringify(stored), { mode: 0o600 });
      return id;
    } catch (err) {
      await discardStream(out);
      await this.remove(id);
      throw err;
    }
  }

  async open(tenantId: string, id: string, nowMs = Date.now()): Promise<OpenedExport | null> {
    if (!FILE_ID.test(id)) return null;
    const meta = await this.readMeta(id);
    if (!meta || meta.tenantId !== tenantId) return null;
    if (Date.parse(meta.expiresAt) <= nowMs) {
      await this.remove(id);
      return null;
    }
    try {
      const file = this.path(id, 'data');
      const { size } = await stat(file);
      return { meta, size, body: createReadStream(file) };
    } catch {
      return null;
    }
  }

  async purgeExpired(nowMs = Date.now()): Promise<number> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch {
      return 0;
    }
    let purged = 0;
    for (const name of names) {
      const [id, ext] = name.split('.');
      if (!FILE_ID.test(id)) continue;
      if (ext === 'json') {
        const meta = await this.readMeta(id);
        if (meta && Date.parse(meta.expiresAt) > nowMs) continue;
        await this.remove(id);
        purged++;
      } else if (ext === 'part' || ext === 'data') {
        // A file without metadata (a crash mid-export) older than the TTL.
        const info = await stat(join(this.dir, name)).catch(() => undefined);
        const hasMeta = names.includes(`${id}.json`);
        if (info && !hasMeta && info.mtimeMs + this.ttlMs <= nowMs) {
          await this.remove(id);
          purged++;
        }
      }
    }
    return purged;
  }

  /** The ids of a tenant's exports (their metadata names the tenant). */
  private async idsOf(tenantId: string): Promise<string[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch {
      return [];
    }
    const ids: string[] = [];
    for (const name of names) {
      const [id, ext] = name.split('.');
      if (ext !== 'json' || !FILE_ID.test(id)) continue;
      if ((await this.readMeta(id))?.tenantId === String(tenantId)) ids.push(id);
    }
    return ids;
  }

  async usage(tenantId: string): Promise<{ files: number; bytes: number }> {
    let bytes = 0;
    const ids = await this.idsOf(tenantId);
    for (const id of ids) bytes += (await stat(this.path(id, 'data')).catch(() => undefined))?.size ?? 0;
    return { files: ids.length, bytes };
  }

  async eraseTenant(tenantId: string): Promise<number> {
    const ids = await this.idsOf(tenantId);
    for (const id of ids) await this.remove(id);
    return ids.length;
  }

  private async sweep(): Promise<void> {
    try {
      const purged = await this.purgeExpired();
      if (purged > 0) this.logger.log({ event: 'exports_purged', purged }, 'exports_purged');
    } catch (err) {
      this.logger.warn({ err: errorMessage(err) }, 'Purging expired exports failed');
    }
  }

  private path(id: string, ext: 'part' | 'data' | 'json'): string {
    return join(this.dir, `${id}.${ext}`);
  }

  private async readMeta(id: string): Promise<StoredExportMeta | null> {
    try {
      const parsed: unknown = JSON.parse(await readFile(this.path(id, 'json'), 'utf8'));
      return isMeta(parsed) ? parsed : null;
    } catch {
      return null;
    }
  }

  private async remove(id: string): Promise<void> {
    await Promise.all(
      (['json', 'data', 'part'] as const).map((ext) => rm(this.path(id, ext), { force: true })),
    );
  }
}
