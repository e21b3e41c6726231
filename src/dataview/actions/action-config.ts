import type { FieldDef } from '../../registry/registry.types';

/**
 * The parts of a dvc_config (spec §2.9.1) that act on records (D52): `actions.bulkActions` with a
 * server operation, and `inlineEditing`. An action without an `operation` is the client's own
 * (an export of the selection, say) and the server leaves it alone.
 */

export type ActionOperation = 'update' | 'delete' | 'workflow';

export interface BulkActionConfig {
  actionId: string;
  /** Absent: a client-side action; the server has nothing to run. */
  operation?: ActionOperation;
  /** update: the values every row gets. */
  set?: Record<string, unknown>;
  /** workflow: the workflow each row starts. */
  workflowCode?: string;
  requireConfirm: boolean;
}

export interface ActionsConfig {
  enableBulkActions: boolean;
  bulkActions: BulkActionConfig[];
}

export interface InlineEditConfig {
  enableInlineEdit: boolean;
  /** Column ids or field codes, as configured. */
  editableColumns: string[];
}

const OPERATIONS: readonly string[] = ['update', 'delete', 'workflow'];

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const section = (config: Record<string, unknown>, key: string): Record<string, unknown> =>
  isObject(config[key]) ? config[key] : {};

/** `actions` as configured; problems listed (an empty list: it can be served). */
export function actionsOf(
  config: Record<string, unknown>,
  fields?: readonly FieldDef[],
): { actions: ActionsConfig; problems: string[] } {
  const problems: string[] = [];
  const actions = section(config, 'actions');
  const raw = actions.bulkActions;
  const list = raw === undefined || raw === null ? [] : Array.isArray(raw) ? (raw as unknown[]) : undefined;
  if (!list) problems.push('actions.bulkActions must be an array');
  const names = fields ? new Set(fields.map((f) => f.name)) : undefined;
  const bulkActions: BulkActionConfig[] = [];
  const seen = new Set<string>();
  for (const [i, a] of (list ?? []).entries()) {
    const label = `actions.bulkActions[${i}]`;
    if (!isObject(a) || typeof a.actionId !== 'string' || a.actionId === '') {
      problems.push(`${label} must be an object with an actionId`);
      continue;
    }
    if (seen.has(a.actionId)) problems.push(`${label}.actionId ${a.actionId} is used twice`);
    seen.add(a.actionId);
    const action: BulkActionConfig = { actionId: a.actionId, requireConfirm: a.requireConfirm === true };
    if (a.operation !== undefined && a.operation !== null) {
      if (typeof a.operation !== 'string' || !OPERATIONS.includes(a.operation)) {
        problems.push(`${label}.operation must be update, delete or workflow`);
        continue;
      }
      action.operation = a.operation as ActionOperation;
    }
    if (action.operation === 'update') {
      if (!isObject(a.set) || Object.keys(a.set).length === 0)
        problems.push(`${label}.set must name at least one field`);
      else {
        for (const name of Object.keys(a.set))
          if (names && !names.has(name))
            problems.push(`${label}.set names ${name}, which the entity does not have`);
        action.set = a.set;
      }
    }
    if (action.operation === 'workflow') {
      if (typeof a.workflowCode !== 'string' || a.workflowCode === '')
        problems.push(`${label}.workflowCode is required for a workflow action`);
      else action.workflowCode = a.workflowCode;
    }
    bulkActions.push(action);
  }
  return { actions: { enableBulkActions: actions.enableBulkActions === true, bulkActions }, problems };
}

/** `inlineEditing` as configured (lenient: anything but a list of texts edits nothing). */
export function inlineEditOf(config: Record<string, unknown>): InlineEditConfig {
  const inline = section(config, 'inlineEditing');
  const columns = Array.isArray(inline.editableColumns) ? (inline.editableColumns as unknown[]) : [];
  return {
    enableInlineEdit: inline.enableInlineEdit === true,
    editableColumns: columns.filter((c): c is string => typeof c === 'string'),
  };
}

/**
 * The field codes `editableColumns` names: a column id (`col_status`) stands for its column's
 * fieldCode, a field code for itself.
 */
export function editableFieldCodes(config: Record<string, unknown>, inline: InlineEditConfig): Set<string> {
  const byColumnId = new Map<string, string>();
  const columns = Array.isArray(config.columns) ? (config.columns as unknown[]) : [];
  for (const c of columns)
    if (isObject(c) && typeof c.columnId === 'string' && typeof c.fieldCode === 'string')
      byColumnId.set(c.columnId, c.fieldCode);
  return new Set(inline.editableColumns.map((c) => byColumnId.get(c) ?? c));
}
