import type { MessagePort } from 'node:worker_threads';
import type { Row } from '../../records/records-read.repository';
import type { ExportColumn, ExportFormat, ExportMeta } from './export-model';

/**
 * The messages of one render session between the main thread and a render thread (issue 21 #1).
 * The main thread reads the rows (records core, keyset batches) and owns the export store; the
 * thread renders. The thread asks for each batch (`next`) only after it has written the previous
 * one, and the main thread answers only once the store has taken what was written so far, so at
 * most about one batch and its output are in flight: memory stays bounded whatever the file size.
 */
export interface SessionStart {
  type: 'session';
  port: MessagePort;
  format: ExportFormat;
  columns: ExportColumn[];
  meta: ExportMeta;
  hasAggregates: boolean;
}

/** Main thread → render thread, over the session's port. */
export type ToRenderer =
  | { type: 'batch'; rows: Row[] }
  /** No more rows; the footer's aggregates when the dataview has any. */
  | { type: 'end'; aggregates?: Record<string, unknown> };

/** Render thread → main thread. */
export type FromRenderer =
  | { type: 'next' }
  | { type: 'chunk'; data: Uint8Array }
  | { type: 'done'; rows: number }
  | { type: 'error'; message: string };
