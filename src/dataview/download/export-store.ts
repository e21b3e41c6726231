import type { Readable, Writable } from 'node:stream';

/**
 * What a stored file is (issue 34), which decides who besides its owner may download it
 * (download-access.ts): a dataview export, an import's error file, a tenant export (D58).
 */
export const STORED_FILE_KINDS = ['export', 'import-errors', 'tenant-export'] as const;
export type StoredFileKind = (typeof STORED_FILE_KINDS)[number];

/** What is known of a stored export besides its bytes. */
export interface StoredExportMeta {
  tenantId: string;
  filename: string;
  contentType: string;
  /** ISO time after which the file is no longer served. */
  expiresAt: string;
  /** The user who made it. */
  createdBy: number;
  /** Absent: only its owner may download it (an import's source file, files stored before kinds). */
  kind?: StoredFileKind;
}

export interface OpenedExport {
  meta: StoredExportMeta;
  /** Bytes, when the store knows without reading the file. */
  size?: number;
  body: Readable;
}

/**
 * Where exports wait for their download (D32, D48), behind one small interface so that the
 * embedded default (a directory) and a shared store (a table of the configuration database) are
 * interchangeable. File ids are unguessable (32 random bytes, base64url).
 */
export interface ExportStore {
  /** Stores what `produce` writes; the new file id. Nothing is kept when `produce` fails. */
  save(meta: Omit<StoredExportMeta, 'expiresAt'>, produce: (out: Writable) => Promise<void>): Promise<string>;
  /** The export `id` of tenant `tenantId`; null when unknown, of another tenant, or expired (then purged). */
  open(tenantId: string, id: string, nowMs?: number): Promise<OpenedExport | null>;
  /** Deletes every expired export; how many. */
  purgeExpired(nowMs?: number): Promise<number>;
  /** A tenant's stored exports: how many and their bytes (D58 usage). */
  usage(tenantId: string): Promise<{ files: number; bytes: number }>;
  /** Deletes every export of a tenant (D58 erase); how many. */
  eraseTenant(tenantId: string): Promise<number>;
}

export const EXPORT_STORE = Symbol('EXPORT_STORE');

/** 32 random bytes in base64url. */
export const FILE_ID = /^[A-Za-z0-9_-]{43}$/;
