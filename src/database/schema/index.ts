/**
 * The configuration database and demo entity tables, declared once and turned into TypeORM Table
 * objects per dialect by the migrations (columns.ts: kinds and the §2.1 convention; tables.ts:
 * the initial migration's tables; revocations.ts: the revoked-tokens migration's; to-table.ts:
 * the per-dialect Table).
 */
export * from './columns';
export * from './tables';
export * from './revocations';
export * from './exports';
export { toTable, toTableColumn, toTableIndex } from './to-table';
export * from './workflow-runtime';
export * from './tenant-indexes';
export * from './jobs';
export * from './tenant-usage';
export * from './tenant-owned';
export * from './history';
export * from './outbox';
export * from './imports';
export * from './job-visibility';
