/**
 * The page's calls, on the typed client (client/src): openapi-fetch for the routes, the wrapper for
 * the token, the tenant header, 401 → signed out, and saves with If-Match. Every answer is the
 * envelope {success, data, meta}; the shapes the page reads are declared here.
 */
import { ApiError, createApiClient, toApiError, type ApiClient } from '../client/src/index';

export { ApiError };

export interface TenantConfig {
  tenant_id: string | number;
  tenant_name: string;
  logo_url?: string | null;
  colors?: Record<string, string> | null;
  settings?: Record<string, unknown> | null;
}

export interface GridColumn {
  columnId: string;
  fieldCode: string | null;
  columnName: string;
  columnOrder: number;
  columnWidth?: number;
  columnType: string;
  isVisible?: boolean;
  isSortable?: boolean;
  isFilterable?: boolean;
  align?: string;
  format?: string | null;
  aggregateFunction?: string;
  /** Options of a select column: [{value, label}] (from a value set) or plain strings. */
  filterOptions?: unknown;
  cellRenderer?: { type: string; colors?: Record<string, string> };
  actions?: { actionId: string; actionName: string; onClick: string; confirmMessage?: string | null }[];
}

export interface FilterOption {
  filterId: string;
  fieldCode: string;
  label: string;
  operators: string[];
  type: string;
}

export interface DataviewConfig {
  dataviewName?: string;
  source: { entityCode: string; primaryKey: string };
  display?: {
    pageSize?: number;
    paginationType?: string;
    enableRowSelection?: boolean;
    selectionMode?: string;
  };
  columns: GridColumn[];
  filters?: { enableFiltering?: boolean; filterOptions?: FilterOption[] };
  sorting?: { enableSorting?: boolean; defaultSort?: SortKey[]; allowMultiSort?: boolean };
  grouping?: { enableGrouping?: boolean; defaultGroupBy?: string | null; groupableColumns?: string[] };
  export?: { enableExport?: boolean; exportFormats?: string[] };
  actions?: { enableBulkActions?: boolean; bulkActions?: BulkAction[] };
  inlineEditing?: { enableInlineEdit?: boolean; editableColumns?: string[]; saveOnBlur?: boolean };
}

/** A configured bulk action (D52); only those with an `operation` are run by the server. */
export interface BulkAction {
  actionId: string;
  actionName: string;
  operation?: 'update' | 'delete' | 'workflow';
  requireConfirm?: boolean;
}

/** The answer of a bulk action (D51's shape): a result per row. */
export interface BulkResult {
  results: { index: number; id: number | null; status: number; error?: { code: string; message: string } }[];
  succeeded: number;
  failed: number;
}

export interface SortKey {
  fieldCode: string;
  direction: 'asc' | 'desc';
}

export interface Filter {
  fieldCode: string;
  operator: string;
  value: unknown;
}

export type Row = Record<string, unknown> & { lastModified?: string };

export interface DataPage {
  rows: Row[];
  pagination: { page?: number; pageSize: number; total?: number; nextCursor?: string | null };
  aggregates: Record<string, number | null>;
}

export interface Group {
  key: unknown;
  count: number;
  aggregates?: Record<string, number | null>;
}

export interface DataQuery {
  page: number;
  pageSize: number;
  filters: Filter[];
  sort: SortKey[];
  search: string;
  groupBy?: string;
  groupKey?: string;
  /** A cursor grid (display.paginationType cursor): pages by cursor, not by page number. */
  cursorPaging?: boolean;
  cursor?: string;
}

export interface WorkflowSummary {
  id: number;
  code: string;
  name: string;
  status: string | number;
  version: number;
}

export interface WorkflowInstance {
  id: number;
  workflowCode: string;
  version: number;
  status: string;
  currentNode: string | null;
  error: unknown;
  waitingFor: { type: string; step: string; message?: string } | null;
  nodes?: { nodeId?: string; step?: string; status: string }[];
}

interface Envelope {
  data?: unknown;
  pagination?: DataPage['pagination'];
  aggregates?: DataPage['aggregates'];
}

/** The whole envelope of a successful answer (data and what stands beside it), or ApiError. */
function envelope(result: { data?: unknown; error?: unknown; response: Response }): Envelope {
  if (result.response.ok) return result.data ?? {};
  throw toApiError(result.response, result.error);
}

/** One entry of a record's history (D56). */
export interface HistoryEntry {
  version: number;
  action: 'created' | 'updated' | 'deleted' | 'restored';
  at: string;
  by: { id: number | null; email: string | null };
  changes: Array<{ field: string; before: unknown; after: unknown }>;
}

/** An import job as `GET /api/v1/imports/{importId}` answers it (D53). */
export interface ImportJob {
  /** Opaque (issue 34): the id to ask again with, never a number to count on. */
  importId: string;
  entity: string;
  status: 'PENDING' | 'RUNNING' | 'COMPLETED' | 'FAILED' | 'CANCELLED';
  dryRun: boolean;
  mode: string;
  onError: string;
  total: number | null;
  processed: number;
  created: number;
  updated: number;
  skipped: number;
  failed: number;
  errors: { row: number; field: string | null; error: string }[];
  ignoredColumns: string[];
  errorFileUrl?: string;
  error?: { code: string; message: string };
}

/** The options of an import (D53), sent as query parameters. */
export interface ImportOptions {
  mode: 'create' | 'upsert';
  key?: string;
  dryRun: boolean;
  onError: 'abort' | 'skip';
}

const XLSX_TYPE = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';

export class PageApi {
  readonly client: ApiClient;

  constructor(onSignedOut: (reason: 'unauthorized' | 'signed-out') => void) {
    this.client = createApiClient({
      baseUrl: window.location.origin,
      storage: window.localStorage,
      onSignedOut,
    });
  }

  async tenantConfig(): Promise<TenantConfig> {
    return envelope(await this.client.api.GET('/api/v1/auth/tenant-config')).data as TenantConfig;
  }

  async dataviewConfig(code: string): Promise<DataviewConfig> {
    const result = await this.client.api.GET('/api/v1/dataviews/{dvc_code}/config', {
      params: { path: { dvc_code: code } },
    });
    return (envelope(result).data as { config: DataviewConfig }).config;
  }

  private async dataRaw(code: string, q: DataQuery): Promise<Envelope> {
    // Groups are answered whole (no page); the rows of one group (groupKey) are paged as usual.
    const query: Record<string, string | number> =
      q.groupBy && q.groupKey === undefined
        ? {}
        : q.cursorPaging
          ? { pageSize: q.pageSize, ...(q.cursor ? { cursor: q.cursor } : {}) }
          : { page: q.page, pageSize: q.pageSize };
    if (q.filters.length) query.filters = JSON.stringify(q.filters);
    if (q.sort.length) query.sort = JSON.stringify(q.sort);
    if (q.search) query.search = q.search;
    if (q.groupBy) query.groupBy = q.groupBy;
    if (q.groupKey !== undefined) query.groupKey = q.groupKey;
    const result = await this.client.api.GET('/api/v1/dataviews/{dvc_code}/data', {
      params: { path: { dvc_code: code }, query },
    });
    return envelope(result);
  }

  async data(code: string, q: DataQuery): Promise<DataPage> {
    const body = await this.dataRaw(code, {
      ...q,
      groupBy: q.groupKey === undefined ? undefined : q.groupBy,
    });
    return {
      rows: (body.data ?? []) as Row[],
      pagination: body.pagination ?? { pageSize: q.pageSize },
      aggregates: body.aggregates ?? {},
    };
  }

  async groups(code: string, q: DataQuery, groupBy: string): Promise<Group[]> {
    const body = await this.dataRaw(code, { ...q, page: 0, groupBy, groupKey: undefined });
    return (body.data ?? []) as Group[];
  }

  async export(
    code: string,
    format: string,
    q: Pick<DataQuery, 'filters' | 'sort' | 'search'>,
  ): Promise<{ filename: string; downloadUrl: string }> {
    const body: Record<string, unknown> = { format };
    if (q.filters.length) body.filters = q.filters;
    if (q.sort.length) body.sort = q.sort;
    if (q.search) body.search = q.search;
    const result = await this.client.api.POST('/api/v1/dataviews/{dvc_code}/export', {
      params: { path: { dvc_code: code } },
      body: body as never,
    });
    return envelope(result).data as { filename: string; downloadUrl: string };
  }

  /** The file of an export (no envelope), with the token: a blob the page saves. */
  async download(downloadUrl: string): Promise<Blob> {
    const fileId = decodeURIComponent(downloadUrl.split('/').pop() ?? '');
    const result = await this.client.api.GET('/api/v1/downloads/{file_id}', {
      params: { path: { file_id: fileId } },
      parseAs: 'blob',
    });
    if (!result.response.ok) envelope({ ...result, error: await errorOf(result.error) });
    return result.data as unknown as Blob;
  }

  /** A record's history, newest first (D56). */
  async history(entity: string, id: string, limit = 20): Promise<HistoryEntry[]> {
    const result = await this.client.api.GET('/api/v1/{entity_code}/{id}/history', {
      params: { path: { entity_code: entity, id: Number(id) }, query: { limit } },
    });
    return (envelope(result).data as { entries: HistoryEntry[] }).entries;
  }

  /** Writes an earlier version back (D56); the token is the record's as the page read it. */
  async restoreVersion(
    entity: string,
    id: string,
    version: number,
    lastModified: string | null,
  ): Promise<{ record: Row; skipped: string[] }> {
    const result = await this.client.api.POST('/api/v1/{entity_code}/{id}/restore', {
      params: { path: { entity_code: entity, id: Number(id) } },
      body: { version, lastModified } as never,
    });
    return envelope(result).data as { record: Row; skipped: string[] };
  }

  /** Inline edit (D52): the changed fields of one row; answers the row as the grid shows it. */
  async editRow(
    code: string,
    id: string,
    changes: Record<string, unknown>,
    lastModified: string,
  ): Promise<Row> {
    const result = await this.client.api.PATCH('/api/v1/dataviews/{dvc_code}/rows/{id}', {
      params: { path: { dvc_code: code, id: Number(id) } },
      body: { ...changes, lastModified },
    });
    return envelope(result).data as Row;
  }

  /** Runs a configured bulk action on the selected rows (D52). */
  async runAction(code: string, actionId: string, ids: number[], confirm: boolean): Promise<BulkResult> {
    const result = await this.client.api.POST('/api/v1/dataviews/{dvc_code}/actions/{actionId}', {
      params: { path: { dvc_code: code, actionId } },
      body: { ids, ...(confirm ? { confirm: true } : {}) },
    });
    return envelope(result).data as BulkResult;
  }

  /** The signed-in user's profile: its role's permissions decide which buttons the page offers. */
  async permissions(): Promise<string[]> {
    return (envelope(await this.client.api.GET('/api/v1/auth/profile')).data as { permissions: string[] })
      .permissions;
  }

  /** Starts an import (D53): the file as the body, its type from its name (a .xlsx is a workbook, else CSV). */
  async startImport(
    entity: string,
    file: Blob & { name?: string },
    options: ImportOptions,
  ): Promise<ImportJob> {
    const xlsx = /\.xlsx$/i.test(file.name ?? '') || file.type === XLSX_TYPE;
    const result = await this.client.api.POST('/api/v1/{entity_code}/imports', {
      params: {
        path: { entity_code: entity },
        query: {
          mode: options.mode,
          ...(options.mode === 'upsert' && options.key ? { key: options.key } : {}),
          ...(options.dryRun ? { dryRun: true } : {}),
          onError: options.onError,
        },
      },
      body: file as never,
      bodySerializer: (body: unknown) => body as Blob,
      headers: { 'Content-Type': xlsx ? XLSX_TYPE : 'text/csv' },
    });
    return envelope(result).data as ImportJob;
  }

  async importStatus(id: string): Promise<ImportJob> {
    const result = await this.client.api.GET('/api/v1/imports/{importId}', {
      params: { path: { importId: id } },
    });
    return envelope(result).data as ImportJob;
  }

  async cancelImport(id: string): Promise<ImportJob> {
    const result = await this.client.api.POST('/api/v1/imports/{importId}/cancel', {
      params: { path: { importId: id } },
    });
    return envelope(result).data as ImportJob;
  }

  /** A single-use ticket for one change stream (D55): EventSource cannot send the token. */
  async changesTicket(): Promise<{ ticket: string; expiresIn: number }> {
    const result = await this.client.api.POST('/api/v1/changes/tickets');
    return envelope(result).data as { ticket: string; expiresIn: number };
  }

  async workflows(): Promise<WorkflowSummary[]> {
    return envelope(await this.client.api.GET('/api/v1/workflows')).data as WorkflowSummary[];
  }

  async startWorkflow(
    code: string,
    input: Record<string, unknown>,
  ): Promise<WorkflowInstance & { instanceId: number }> {
    const result = await this.client.api.POST('/api/v1/workflows/{code}/start', {
      params: { path: { code } },
      body: { input } as never,
    });
    return envelope(result).data as WorkflowInstance & { instanceId: number };
  }

  async instance(id: number): Promise<WorkflowInstance> {
    const result = await this.client.api.GET('/api/v1/workflows/instances/{id}', {
      params: { path: { id } },
    });
    return envelope(result).data as WorkflowInstance;
  }
}

/** openapi-fetch gives a blob's error body as a blob too. */
async function errorOf(error: unknown): Promise<unknown> {
  if (error instanceof Blob) {
    try {
      return JSON.parse(await error.text()) as unknown;
    } catch {
      return {};
    }
  }
  return error;
}

/** status, code and message of anything thrown by the client or the page. */
export function describe(err: unknown): { status: number; code: string; message: string; details: unknown } {
  if (err instanceof ApiError)
    return { status: err.status, code: err.code, message: err.message, details: err.details };
  return {
    status: 0,
    code: 'NETWORK_ERROR',
    message: err instanceof Error ? err.message : String(err),
    details: null,
  };
}
