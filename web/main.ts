/**
 * The reference SPA (issue 15): the tenant's login screen, the customers_grid dataview rendered
 * from its configuration, inline edits saved with the concurrency token, exports, a workflow, and
 * a return to the login screen on any 401. Served in development at `/`; reached through the
 * tenant proxy (`http://acme.localhost:8080/`), which adds the tenant header, or directly at the
 * service with a pasted header (`npm run -s tenant-header -- 1`).
 */
import {
  describe,
  PageApi,
  type BulkAction,
  type DataPage,
  type DataQuery,
  type DataviewConfig,
  type Filter,
  type GridColumn,
  type Group,
  type Row,
  type TenantConfig,
  type WorkflowInstance,
} from './api';
import { h, mount, saveBlob, text } from './dom';
import { offerImport } from './import-dialog';
import { LiveChanges, LiveGrid, type LiveView } from './live-grid';

const DATAVIEW = new URLSearchParams(window.location.search).get('dataview') ?? 'customers_grid';
const FINAL_STATES = new Set(['COMPLETED', 'FAILED', 'CANCELLED']);

const root = document.getElementById('root') as HTMLElement;
let signOutNotice = '';
const api = new PageApi((reason) => {
  signOutNotice =
    reason === 'unauthorized' ? 'Your session has ended. Please sign in again.' : 'You have signed out.';
  void showLogin();
});

let tenant: TenantConfig | null = null;
/** The grid's change stream (live-grid.ts), closed when the grid goes. */
let live: LiveChanges | null = null;

function applyBranding(config: TenantConfig): void {
  const colors = config.colors ?? {};
  const style = document.documentElement.style;
  for (const name of ['primary', 'secondary', 'background']) {
    const value = colors[name];
    if (typeof value === 'string' && /^#[0-9a-f]{3,8}$|^[a-z]+$/i.test(value))
      style.setProperty(`--${name}`, value);
  }
  document.title = config.tenant_name;
}

function logo(config: TenantConfig | null, cls: string): HTMLElement | null {
  const url = config?.logo_url;
  return typeof url === 'string' && /^(https?:|data:image\/)/.test(url)
    ? h('img', {
        class: cls,
        src: url,
        alt: `${config?.tenant_name ?? ''} logo`,
        'data-testid': 'tenant-logo',
      })
    : null;
}

// ---------------------------------------------------------------------------------------------
// Login screen
// ---------------------------------------------------------------------------------------------

async function loadTenant(): Promise<{ config: TenantConfig | null; problem: string }> {
  try {
    const config = await api.tenantConfig();
    applyBranding(config);
    return { config, problem: '' };
  } catch (err) {
    const e = describe(err);
    if (e.status === 400)
      return {
        config: null,
        problem: 'No tenant: open the page through the tenant proxy, or paste a tenant header.',
      };
    return { config: null, problem: `Tenant configuration: ${e.message}` };
  }
}

async function showLogin(): Promise<void> {
  live?.stop();
  live = null;
  const { config, problem } = await loadTenant();
  tenant = config;
  const message = h(
    'p',
    { class: 'message', role: 'alert', 'data-testid': 'login-message' },
    signOutNotice || problem,
  );
  signOutNotice = '';
  const email = h('input', {
    type: 'email',
    name: 'email',
    autocomplete: 'username',
    required: true,
    'data-testid': 'email',
  });
  const password = h('input', {
    type: 'password',
    name: 'password',
    autocomplete: 'current-password',
    required: true,
    'data-testid': 'password',
  });
  const header = h('textarea', { name: 'tenantHeader', rows: 3, 'data-testid': 'tenant-header' });
  header.value = api.client.tenantHeader ?? '';
  const submit = h('button', { type: 'submit', class: 'primary', 'data-testid': 'sign-in' }, 'Sign in');
  const form = h(
    'form',
    { class: 'login-form', 'data-testid': 'login-form' },
    h('label', {}, 'E-mail', email),
    h('label', {}, 'Password', password),
    config ? null : h('label', {}, 'Tenant header (x-tenant-id, from npm run -s tenant-header -- 1)', header),
    submit,
    message,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void (async () => {
      submit.disabled = true;
      message.textContent = '';
      try {
        if (!config && header.value.trim()) {
          api.client.setTenantHeader(header.value.trim());
          const again = await loadTenant();
          if (!again.config) throw new Error(again.problem);
          tenant = again.config;
        }
        await api.client.signIn(email.value, password.value);
        await showApp();
      } catch (err) {
        message.textContent = describe(err).message || 'Sign-in failed';
      } finally {
        submit.disabled = false;
      }
    })();
  });
  mount(
    root,
    h(
      'main',
      { class: 'login', 'data-testid': 'login-screen' },
      h(
        'div',
        { class: 'card' },
        logo(config, 'logo'),
        h('h1', { 'data-testid': 'tenant-name' }, config?.tenant_name ?? 'Sign in'),
        form,
      ),
    ),
  );
  email.focus();
}

// ---------------------------------------------------------------------------------------------
// Signed in: the grid, the export buttons and the workflow panel
// ---------------------------------------------------------------------------------------------

interface GridState extends DataQuery {
  groupBy?: string;
  groupKey?: string;
}

async function showApp(): Promise<void> {
  if (!tenant) tenant = (await loadTenant()).config;
  const status = h('p', { class: 'status', role: 'status', 'data-testid': 'status' });
  const setStatus = (text: string, kind: 'info' | 'error' = 'info'): void => {
    status.textContent = text;
    status.className = `status ${kind}`;
  };
  const logout = h('button', { type: 'button', 'data-testid': 'logout' }, 'Log out');
  logout.addEventListener('click', () => {
    void api.client.signOut().catch(() => undefined);
  });
  const body = h('section', { class: 'content' });
  mount(
    root,
    h(
      'header',
      { class: 'topbar' },
      logo(tenant, 'logo-small'),
      h('strong', { 'data-testid': 'app-tenant' }, tenant?.tenant_name ?? ''),
      h('span', { class: 'spacer' }),
      logout,
    ),
    h('main', { class: 'app', 'data-testid': 'app' }, status, body),
  );
  let config: DataviewConfig;
  try {
    config = await api.dataviewConfig(DATAVIEW);
  } catch (err) {
    if (describe(err).status !== 401) setStatus(describe(err).message, 'error');
    return;
  }
  const grid = new Grid(config, setStatus, () => {
    if (status.classList.contains('error')) setStatus('');
  });
  mount(body, grid.element, workflowPanel(setStatus, grid));
  void offerImport(grid.importSlot, {
    api,
    entity: config.source.entityCode,
    keyFields: columnsOf(config).flatMap((c) => (c.fieldCode ? [c.fieldCode] : [])),
    onImported: () => grid.reload(),
    setStatus,
  });
  live?.stop();
  live = new LiveChanges(api, DATAVIEW, new LiveGrid(grid), (state) => (grid.element.dataset.live = state));
  live.start();
  await grid.reload();
}

/** An error for the status line: code, message and the fields a 400 names. */
function problem(e: { code: string; message: string; details: unknown }): string {
  const fields = Array.isArray(e.details)
    ? e.details
        .map((d: unknown) =>
          d && typeof d === 'object'
            ? `${String((d as { field?: unknown }).field)} ${String((d as { error?: unknown }).error)}`
            : '',
        )
        .filter(Boolean)
    : [];
  return `${e.code}: ${e.message}${fields.length ? ` (${fields.join('; ')})` : ''}`;
}

function columnsOf(config: DataviewConfig): GridColumn[] {
  return config.columns.filter((c) => c.isVisible !== false).sort((a, b) => a.columnOrder - b.columnOrder);
}

function optionsOf(column: GridColumn | undefined): { value: string; label: string }[] {
  const raw = column?.filterOptions;
  if (!Array.isArray(raw)) return [];
  return raw
    .map((o: unknown) =>
      typeof o === 'string'
        ? { value: o, label: o }
        : {
            value: text((o as { value?: unknown }).value),
            label: text((o as { label?: unknown }).label ?? (o as { value?: unknown }).value),
          },
    )
    .filter((o) => o.value !== '');
}

class Grid implements LiveView {
  readonly element = h('div', { class: 'grid', 'data-testid': 'grid' });
  private readonly columns: GridColumn[];
  private readonly key: string;
  private readonly entity: string;
  private readonly state: GridState;
  private readonly table = h('table', { 'data-testid': 'grid-table' });
  private readonly pager = h('div', { class: 'pager', 'data-testid': 'pager' });
  private readonly conflict = h('div', { class: 'conflict', hidden: true, 'data-testid': 'conflict' });
  private readonly history = h('div', { class: 'history', hidden: true, 'data-testid': 'history' });
  private readonly groupList = h('div', { class: 'groups', 'data-testid': 'groups' });
  /** The Import button, when the user may create records of the entity (import-dialog.ts). */
  readonly importSlot = h('span', { class: 'import-slot', 'data-testid': 'import-slot' });
  private page: DataPage = { rows: [], pagination: { pageSize: 25 }, aggregates: {} };
  private editing: string | null = null;
  /** Rows whose save is in flight (a live change of them is their own echo, or a 409 to come). */
  private readonly saving = new Set<string>();
  /** The latest reload and conflict panel: an older answer is not shown over a newer one. */
  private loadSeq = 0;
  private conflictSeq = 0;
  /** Rows ticked for a bulk action (D52), by key; kept across pages until an action runs. */
  private readonly checked = new Set<string>();
  /** Cursor grids: the cursors of the pages before this one (Previous goes back through them). */
  private readonly cursorTrail: (string | undefined)[] = [];
  /** Inline editing (D52): the field codes editableColumns names (column ids or field codes). */
  private readonly inlineFields = new Set<string>();
  private readonly bulkButtons: HTMLButtonElement[] = [];
  private readonly bulkResult = h('div', {
    class: 'bulk-result',
    hidden: true,
    'data-testid': 'bulk-result',
  });
  selected: Row | null = null;
  onSelect: (row: Row) => void = () => undefined;
  private readonly money: Intl.NumberFormat;

  constructor(
    private readonly config: DataviewConfig,
    private readonly setStatus: (text: string, kind?: 'info' | 'error') => void,
    private readonly clearError: () => void,
  ) {
    this.columns = columnsOf(config);
    this.key = config.source.primaryKey;
    this.entity = config.source.entityCode;
    if (config.inlineEditing?.enableInlineEdit)
      for (const c of config.inlineEditing.editableColumns ?? [])
        this.inlineFields.add(config.columns.find((col) => col.columnId === c)?.fieldCode ?? c);
    this.state = {
      cursorPaging: config.display?.paginationType === 'cursor',
      page: 0,
      pageSize: config.display?.pageSize ?? 25,
      filters: [],
      sort: [...(config.sorting?.defaultSort ?? [])],
      search: '',
      groupBy: config.grouping?.defaultGroupBy ?? undefined,
    };
    const settings = tenant?.settings ?? {};
    const locale = typeof settings.locale === 'string' ? settings.locale : 'en-US';
    const currency = typeof settings.currency === 'string' ? settings.currency : 'USD';
    this.money = new Intl.NumberFormat(locale, { style: 'currency', currency, maximumFractionDigits: 2 });
    mount(
      this.element,
      h('h2', {}, config.dataviewName ?? DATAVIEW),
      this.toolbar(),
      this.bulkResult,
      this.conflict,
      this.history,
      this.groupList,
      h('div', { class: 'table-wrap' }, this.table),
      this.pager,
    );
  }

  // -- toolbar: search, the configured filters, grouping, exports --------------------------------

  private toolbar(): HTMLElement {
    const search = h('input', { type: 'search', placeholder: 'Search', 'data-testid': 'search' });
    search.addEventListener('keydown', (event) => {
      if (event.key === 'Enter') this.apply({ search: search.value.trim() });
    });
    search.addEventListener('search', () => this.apply({ search: search.value.trim() }));
    const parts: (HTMLElement | null)[] = [search];
    const options =
      this.config.filters?.enableFiltering === false ? [] : (this.config.filters?.filterOptions ?? []);
    const controls: (() => Filter | null)[] = [];
    for (const option of options) {
      if (option.type === 'select') {
        const column = this.config.columns.find((c) => c.fieldCode === option.fieldCode);
        const select = h(
          'select',
          { 'data-testid': `filter-${option.filterId}`, 'aria-label': option.label },
          h('option', { value: '' }, `${option.label}: all`),
          optionsOf(column).map((o) => h('option', { value: o.value }, o.label)),
        );
        select.addEventListener('change', () => this.apply({}));
        controls.push(() =>
          select.value
            ? {
                fieldCode: option.fieldCode,
                operator: option.operators.includes('equals') ? 'equals' : option.operators[0],
                value: select.value,
              }
            : null,
        );
        parts.push(h('label', {}, select));
      } else {
        const operator = h(
          'select',
          { 'data-testid': `filter-${option.filterId}-operator`, 'aria-label': `${option.label} operator` },
          option.operators.map((op) => h('option', { value: op }, op.replace(/_/g, ' '))),
        );
        const input = h('input', {
          type: option.type === 'number' ? 'number' : 'text',
          placeholder: option.label,
          'data-testid': `filter-${option.filterId}`,
        });
        input.addEventListener('keydown', (event) => {
          if (event.key === 'Enter') this.apply({});
        });
        operator.addEventListener('change', () => input.value && this.apply({}));
        controls.push(() =>
          input.value.trim()
            ? { fieldCode: option.fieldCode, operator: operator.value, value: input.value.trim() }
            : null,
        );
        parts.push(h('span', { class: 'filter' }, operator, input));
      }
    }
    this.readFilters = () => controls.map((c) => c()).filter((f): f is Filter => f !== null);
    if (options.length) {
      const applyButton = h('button', { type: 'button', 'data-testid': 'apply-filters' }, 'Apply');
      applyButton.addEventListener('click', () => this.apply({ search: search.value.trim() }));
      parts.push(applyButton);
    }
    const groupable = this.config.grouping?.groupableColumns ?? [];
    if (groupable.length) {
      const groupBy = h(
        'select',
        { 'data-testid': 'group-by', 'aria-label': 'Group by' },
        h('option', { value: '' }, 'No grouping'),
        groupable.map((code) =>
          h(
            'option',
            { value: code },
            `Group by ${this.config.columns.find((c) => c.fieldCode === code)?.columnName ?? code}`,
          ),
        ),
      );
      groupBy.value = this.state.groupBy ?? '';
      groupBy.addEventListener('change', () => {
        this.state.groupBy = groupBy.value || undefined;
        this.state.groupKey = undefined;
        this.apply({});
      });
      parts.push(groupBy);
    }
    if (this.config.export?.enableExport) {
      for (const format of this.config.export.exportFormats ?? []) {
        const label = format === 'excel' ? 'XLSX' : format.toUpperCase();
        const button = h('button', { type: 'button', 'data-testid': `export-${format}` }, `Export ${label}`);
        button.addEventListener('click', () => void this.exportAs(format, button));
        parts.push(button);
      }
    }
    if (this.multiSelect && this.config.actions?.enableBulkActions) {
      for (const action of this.config.actions.bulkActions ?? []) {
        if (!action.operation) continue; // the client's own (export_selected): not run here
        const button = h(
          'button',
          { type: 'button', 'data-testid': `bulk-${action.actionId}`, disabled: true },
          action.actionName,
        );
        button.addEventListener('click', () => void this.runBulk(action, button));
        this.bulkButtons.push(button);
        parts.push(button);
      }
    }
    return h('div', { class: 'toolbar' }, parts, this.importSlot);
  }

  private get multiSelect(): boolean {
    return (
      this.config.display?.enableRowSelection === true && this.config.display.selectionMode === 'multiple'
    );
  }

  private updateBulkButtons(): void {
    for (const b of this.bulkButtons) b.disabled = this.checked.size === 0;
  }

  /** D52: the action on the ticked rows; a confirmation first where the action requires it. */
  private async runBulk(action: BulkAction, button: HTMLButtonElement): Promise<void> {
    const ids = [...this.checked].map(Number);
    if (ids.length === 0) return;
    if (action.requireConfirm && !window.confirm(`${action.actionName}: ${ids.length} row(s)?`)) return;
    button.disabled = true;
    try {
      const result = await api.runAction(DATAVIEW, action.actionId, ids, action.requireConfirm === true);
      const failures = result.results.filter((r) => r.error);
      mount(
        this.bulkResult,
        h('strong', {}, `${action.actionName}: ${result.succeeded} succeeded, ${result.failed} failed`),
        failures.length
          ? h(
              'ul',
              {},
              failures.map((f) =>
                h(
                  'li',
                  { 'data-testid': `bulk-failure-${f.id}` },
                  `#${f.id}: ${f.status} ${f.error?.message ?? ''}`,
                ),
              ),
            )
          : null,
      );
      this.bulkResult.hidden = false;
      this.checked.clear();
      await this.reload();
    } catch (err) {
      const e = describe(err);
      if (e.status !== 401) this.setStatus(problem(e), 'error');
    } finally {
      this.updateBulkButtons();
    }
  }

  private readFilters: () => Filter[] = () => [];

  private apply(change: Partial<GridState>): void {
    this.cursorTrail.length = 0;
    Object.assign(this.state, change, { page: 0, cursor: undefined, filters: this.readFilters() });
    void this.reload();
  }

  // -- data --------------------------------------------------------------------------------------

  /** aria-busy="true" while a reload runs (tests and screen readers wait for "false"). */
  async reload(): Promise<void> {
    this.editing = null;
    const seq = ++this.loadSeq;
    this.element.setAttribute('aria-busy', 'true');
    try {
      if (this.state.groupBy) await this.loadGroups(this.state.groupBy);
      else mount(this.groupList);
      if (this.state.groupBy && this.state.groupKey === undefined) {
        this.page = { rows: [], pagination: { pageSize: this.state.pageSize, total: 0 }, aggregates: {} };
        this.render();
        return;
      }
      const page = await api.data(DATAVIEW, this.state);
      if (seq !== this.loadSeq) return; // a newer reload is under way
      this.page = page;
      this.clearError();
      this.render();
    } catch (err) {
      const e = describe(err);
      if (e.status !== 401 && seq === this.loadSeq) this.setStatus(problem(e), 'error');
    } finally {
      if (seq === this.loadSeq) this.element.setAttribute('aria-busy', 'false');
    }
  }

  // -- live changes (live-grid.ts) -----------------------------------------------------------------

  rowById(id: string): Row | undefined {
    return this.page.rows.find((r) => String(r[this.key]) === id);
  }

  rowElement(id: string): HTMLElement | null {
    return this.table.querySelector(`tbody tr[data-id="${CSS.escape(id)}"]`);
  }

  replaceRow(row: Row): HTMLElement | null {
    const id = String(row[this.key]);
    this.page.rows = this.page.rows.map((r) => (String(r[this.key]) === id ? row : r));
    const tr = this.renderRow(row);
    this.rowElement(id)?.replaceWith(tr);
    return tr;
  }

  removeRow(id: string): void {
    this.page.rows = this.page.rows.filter((r) => String(r[this.key]) !== id);
    this.rowElement(id)?.remove();
    if (this.editing !== id) return;
    this.editing = null;
    this.setStatus(`${this.entity} ${id} was deleted by someone else`, 'error');
  }

  /** The row (without an id: any row) is open in the edit form. */
  isEditing(id?: string): boolean {
    return id === undefined ? this.editing !== null : this.editing === id;
  }

  /** A save of the row (without an id: of any row) is in flight. */
  isSaving(id?: string): boolean {
    return id === undefined ? this.saving.size > 0 : this.saving.has(id);
  }

  isLoading(): boolean {
    return this.element.getAttribute('aria-busy') === 'true';
  }

  /** An editor's text as the field's value (numbers for numeric columns). */
  fieldValue(code: string, before: unknown, raw: string): unknown {
    const column = this.columns.find((c) => c.fieldCode === code);
    if (column?.columnType === 'numeric' || typeof before === 'number')
      return raw === '' ? null : Number(raw);
    return raw;
  }

  private async loadGroups(groupBy: string): Promise<void> {
    const groups: Group[] = await api.groups(DATAVIEW, this.state, groupBy);
    const label = (key: unknown): string => (key === null || key === undefined ? '(none)' : text(key));
    mount(
      this.groupList,
      groups.map((g) => {
        const key = g.key === null || g.key === undefined ? 'null' : text(g.key);
        const button = h(
          'button',
          {
            type: 'button',
            class: key === this.state.groupKey ? 'group active' : 'group',
            'data-testid': `group-${key}`,
          },
          `${label(g.key)} (${g.count})`,
        );
        button.addEventListener('click', () => {
          this.state.groupKey = key;
          this.state.page = 0;
          void this.reload();
        });
        return button;
      }),
    );
  }

  // -- rendering ---------------------------------------------------------------------------------

  private format(column: GridColumn, value: unknown): Node | string {
    if (value === null || value === undefined) return '';
    if (column.format === 'currency' && typeof value === 'number') return this.money.format(value);
    if (column.cellRenderer?.type === 'badge') {
      const color = column.cellRenderer.colors?.[text(value)] ?? 'gray';
      return h('span', { class: `badge badge-${color}` }, text(value));
    }
    if (column.columnType === 'link' && typeof value === 'string' && value.includes('@'))
      return h('a', { href: `mailto:${value}` }, value);
    return text(value);
  }

  private render(): void {
    const sortOf = (code: string | null): string =>
      this.state.sort.find((s) => s.fieldCode === code)?.direction ?? '';
    const head = h(
      'tr',
      {},
      this.multiSelect ? h('th', { class: 'select' }, this.selectAllBox()) : null,
      this.columns.map((column) => {
        const direction = sortOf(column.fieldCode);
        const sortable =
          column.isSortable && column.fieldCode && this.config.sorting?.enableSorting !== false;
        const th = h(
          'th',
          {
            style: column.columnWidth ? `width:${column.columnWidth}px` : undefined,
            class: sortable ? 'sortable' : undefined,
            'data-testid': `header-${column.fieldCode ?? column.columnId}`,
            'aria-sort': direction === 'asc' ? 'ascending' : direction === 'desc' ? 'descending' : undefined,
          },
          column.columnName,
          direction ? (direction === 'asc' ? ' ▲' : ' ▼') : '',
        );
        if (sortable) th.addEventListener('click', () => this.toggleSort(column.fieldCode as string));
        return th;
      }),
    );
    const rows = this.page.rows.map((row) => this.renderRow(row));
    const aggregates = this.columns.some(
      (c) => c.aggregateFunction && c.fieldCode && c.fieldCode in this.page.aggregates,
    )
      ? h(
          'tr',
          { class: 'aggregates', 'data-testid': 'aggregates' },
          this.multiSelect ? h('td', {}) : null,
          this.columns.map((c) =>
            h(
              'td',
              { class: `align-${c.align ?? 'left'}` },
              c.fieldCode && c.fieldCode in this.page.aggregates
                ? this.format(c, this.page.aggregates[c.fieldCode])
                : '',
            ),
          ),
        )
      : null;
    mount(this.table, h('thead', {}, head), h('tbody', {}, rows), h('tfoot', {}, aggregates));
    this.renderPager();
  }

  private renderRow(row: Row): HTMLTableRowElement {
    const id = String(row[this.key]);
    const editing = this.editing === id;
    const inputs = new Map<string, HTMLInputElement | HTMLSelectElement>();
    const tr = h('tr', {
      'data-testid': `row-${id}`,
      'data-id': id,
      class: this.selected?.[this.key] === row[this.key] ? 'selected' : undefined,
    });
    tr.addEventListener('click', (event) => {
      if ((event.target as HTMLElement).closest('button, input, select, a')) return;
      this.selected = row;
      this.onSelect(row);
      for (const other of tr.parentElement?.children ?? []) other.classList.remove('selected');
      tr.classList.add('selected');
    });
    if (this.multiSelect) {
      const box = h('input', {
        type: 'checkbox',
        'data-testid': `select-${id}`,
        'aria-label': `Select ${id}`,
      });
      box.checked = this.checked.has(id);
      box.addEventListener('change', () => {
        if (box.checked) this.checked.add(id);
        else this.checked.delete(id);
        this.updateBulkButtons();
      });
      tr.append(h('td', { class: 'select' }, box));
    }
    for (const column of this.columns) {
      const td = h('td', {
        class: `align-${column.align ?? 'left'}`,
        'data-testid': `cell-${id}-${column.fieldCode ?? column.columnId}`,
      });
      if (column.columnType === 'actions') {
        mount(td, editing ? this.editButtons(row, inputs) : this.actionButtons(row, column));
      } else if (!editing && column.fieldCode && this.inlineFields.has(column.fieldCode)) {
        mount(td, this.inlineEditor(column, row));
      } else if (editing && this.isEditable(column, row)) {
        const input = this.editor(column, row[column.fieldCode as string]);
        inputs.set(column.fieldCode as string, input);
        mount(td, input);
      } else if (column.fieldCode) {
        mount(td, this.format(column, row[column.fieldCode]));
      }
      tr.append(td);
    }
    return tr;
  }

  /** D52: an editable cell saves itself when it changes (saveOnBlur: on change of a select, on blur of an input). */
  private inlineEditor(column: GridColumn, row: Row): HTMLInputElement | HTMLSelectElement {
    const id = String(row[this.key]);
    const code = column.fieldCode as string;
    const editor = this.editor(column, row[code]);
    editor.setAttribute('data-testid', `inline-${id}-${code}`);
    editor.setAttribute('aria-label', `${column.columnName} of ${id}`);
    editor.addEventListener('change', () => {
      const value = this.fieldValue(code, row[code], editor.value);
      if (value !== row[code]) void this.save(row, { [code]: value }, row.lastModified ?? '');
    });
    return editor;
  }

  /** Ticks (or clears) every row of the page shown. */
  private selectAllBox(): HTMLInputElement {
    const ids = this.page.rows.map((r) => String(r[this.key]));
    const box = h('input', {
      type: 'checkbox',
      'data-testid': 'select-all',
      'aria-label': 'Select all rows',
    });
    box.checked = ids.length > 0 && ids.every((id) => this.checked.has(id));
    box.addEventListener('change', () => {
      for (const id of ids) {
        if (box.checked) this.checked.add(id);
        else this.checked.delete(id);
      }
      this.render();
      this.updateBulkButtons();
    });
    return box;
  }

  private isEditable(column: GridColumn, row: Row): boolean {
    const code = column.fieldCode;
    if (!code || code === this.key || !(code in row)) return false;
    const value = row[code];
    return !(typeof value === 'string' && value.includes('***')); // masked values are not editable (D43)
  }

  private editor(column: GridColumn, value: unknown): HTMLInputElement | HTMLSelectElement {
    const testid = `edit-${column.fieldCode}`;
    const options = optionsOf(column);
    if (column.columnType === 'select' && options.length) {
      const select = h(
        'select',
        { 'data-testid': testid },
        options.map((o) => h('option', { value: o.value }, o.label)),
      );
      select.value = text(value);
      return select;
    }
    const numeric = column.columnType === 'numeric' || typeof value === 'number';
    const input = h('input', {
      type: numeric ? 'number' : 'text',
      step: numeric ? 'any' : undefined,
      'data-testid': testid,
    });
    input.value = text(value);
    return input;
  }

  private actionButtons(row: Row, column: GridColumn): HTMLElement[] {
    const edits = (column.actions ?? []).filter((a) => a.onClick === 'editRecord');
    const history = h('button', { type: 'button', 'data-testid': 'action-history' }, 'History');
    history.addEventListener('click', () => void this.showHistory(row));
    return edits
      .map((action) => {
        const button = h(
          'button',
          { type: 'button', 'data-testid': `action-${action.actionId}` },
          action.actionName,
        );
        button.addEventListener('click', () => {
          this.editing = String(row[this.key]);
          this.hideConflict();
          this.render();
        });
        return button;
      })
      .concat(edits.length > 0 ? [history] : []);
  }

  /** D56: who changed the record, when and what, newest first; each earlier version can be restored. */
  private async showHistory(row: Row): Promise<void> {
    const id = String(row[this.key]);
    let token = row.lastModified ?? null;
    const close = h('button', { type: 'button', 'data-testid': 'history-close' }, 'Close');
    close.addEventListener('click', () => {
      this.history.hidden = true;
      mount(this.history);
    });
    const list = h('ol', { class: 'history-entries' });
    mount(this.history, h('strong', {}, `History of ${this.entity} ${id}`), close, list);
    this.history.hidden = false;
    const load = async (): Promise<void> => {
      const entries = await api.history(this.entity, id);
      mount(
        list,
        entries.map((entry, i) => {
          const restore =
            i > 0 && entry.action !== 'deleted'
              ? h('button', { type: 'button', 'data-testid': `restore-v${entry.version}` }, 'Restore')
              : null;
          restore?.addEventListener('click', () => {
            void (async () => {
              try {
                const result = await api.restoreVersion(this.entity, id, entry.version, token);
                token = result.record.lastModified ?? null;
                const skipped = result.skipped.length ? ` (skipped: ${result.skipped.join(', ')})` : '';
                this.setStatus(`Restored ${this.entity} ${id} to version ${entry.version}${skipped}`);
                await this.reload();
                await load();
              } catch (err) {
                const e = describe(err);
                if (e.status === 401) return;
                this.setStatus(
                  e.status === 409
                    ? `Conflict: ${this.entity} ${id} was changed by someone else`
                    : problem(e),
                  'error',
                );
              }
            })();
          });
          return h(
            'li',
            { 'data-testid': `history-v${entry.version}`, 'data-version': entry.version },
            h(
              'div',
              { class: 'history-head' },
              `v${entry.version} · ${entry.action} · ${new Date(entry.at).toLocaleString()} · ${
                entry.by.email ?? `user ${entry.by.id ?? '?'}`
              }`,
              restore,
            ),
            h(
              'ul',
              {},
              entry.changes.map((c) =>
                h('li', { 'data-field': c.field }, `${c.field}: ${text(c.before)} → ${text(c.after)}`),
              ),
            ),
          );
        }),
      );
    };
    try {
      await load();
    } catch (err) {
      if (describe(err).status !== 401) this.setStatus(problem(describe(err)), 'error');
    }
  }

  private editButtons(row: Row, inputs: Map<string, HTMLInputElement | HTMLSelectElement>): HTMLElement[] {
    const save = h('button', { type: 'button', class: 'primary', 'data-testid': 'save' }, 'Save');
    const cancel = h('button', { type: 'button', 'data-testid': 'cancel' }, 'Cancel');
    save.addEventListener('click', () => {
      const changes: Record<string, unknown> = {};
      for (const [code, input] of inputs) {
        const value = this.fieldValue(code, row[code], input.value);
        if (value !== row[code]) changes[code] = value;
      }
      void this.save(row, changes, row.lastModified ?? '');
    });
    cancel.addEventListener('click', () => {
      this.editing = null;
      this.render();
    });
    return [save, cancel];
  }

  private async save(row: Row, changes: Record<string, unknown>, lastModified: string): Promise<void> {
    const id = String(row[this.key]);
    if (Object.keys(changes).length === 0) {
      this.editing = null;
      this.render();
      return;
    }
    this.saving.add(id);
    try {
      if (this.inlineFields.size > 0) {
        // The answer is the row as the grid shows it: it replaces the row in place.
        const saved = await api.editRow(DATAVIEW, id, changes, lastModified);
        this.page.rows = this.page.rows.map((r) => (String(r[this.key]) === id ? saved : r));
        this.hideConflict();
        this.setStatus(`Saved ${this.entity} ${id}`);
        this.render();
        return;
      }
      await api.client.saveRecord(this.entity, id, changes, lastModified);
      this.hideConflict();
      this.setStatus(`Saved ${this.entity} ${id}`);
      await this.reload();
    } catch (err) {
      const e = describe(err);
      if (e.status === 401) return;
      if (e.code === 'CONFLICT' || e.status === 409) this.showConflict(row, changes);
      else this.setStatus(problem(e), 'error');
    } finally {
      this.saving.delete(id);
    }
  }

  private hideConflict(): void {
    this.conflict.hidden = true;
    mount(this.conflict);
  }

  /** 409: someone saved the row since it was read. Show both values; reload theirs or overwrite. */
  showConflict(row: Row, changes: Record<string, unknown>, also: string[] = []): void {
    const id = String(row[this.key]);
    const seq = ++this.conflictSeq;
    const fields = [...new Set([...Object.keys(changes), ...also])];
    this.setStatus(`Conflict: ${this.entity} ${id} was changed by someone else`, 'error');
    const table = h('table', { class: 'conflict-values' });
    const reload = h(
      'button',
      { type: 'button', 'data-testid': 'conflict-reload' },
      'Discard mine, reload theirs',
    );
    const overwrite = h(
      'button',
      { type: 'button', class: 'danger', 'data-testid': 'conflict-overwrite' },
      'Overwrite with mine',
    );
    mount(
      this.conflict,
      h('strong', {}, `This record was changed by someone else since you read it.`),
      table,
      h('div', { class: 'buttons' }, reload, overwrite),
    );
    this.conflict.hidden = false;
    let current: (Row & { lastModified: string }) | null = null;
    void (async () => {
      try {
        const record = (await api.client.getRecord(this.entity, id)) as unknown as Row & {
          lastModified: string;
        };
        if (seq !== this.conflictSeq) return; // a newer conflict took the panel
        current = record;
        mount(
          table,
          h('tr', {}, h('th', {}, 'Field'), h('th', {}, 'Yours'), h('th', {}, 'Current')),
          fields.map((code) =>
            h(
              'tr',
              { 'data-testid': `conflict-${code}` },
              h('td', {}, code),
              h('td', { class: 'mine' }, text(code in changes ? changes[code] : row[code])),
              h('td', { class: 'theirs' }, text(record[code])),
            ),
          ),
        );
      } catch (err) {
        if (describe(err).status !== 401) this.setStatus(describe(err).message, 'error');
      }
    })();
    reload.addEventListener('click', () => {
      this.hideConflict();
      this.setStatus('Reloaded the current values');
      void this.reload();
    });
    overwrite.addEventListener('click', () => {
      if (!current) return;
      void this.save(current, changes, current.lastModified);
    });
  }

  private toggleSort(code: string): void {
    const now = this.state.sort.find((s) => s.fieldCode === code)?.direction;
    this.state.sort = [{ fieldCode: code, direction: now === 'asc' ? 'desc' : 'asc' }];
    this.state.page = 0;
    this.state.cursor = undefined;
    this.cursorTrail.length = 0;
    void this.reload();
  }

  private renderPager(): void {
    if (this.state.cursorPaging) {
      this.renderCursorPager();
      return;
    }
    const { page = 0, pageSize, total } = this.page.pagination;
    const pages = total === undefined ? undefined : Math.max(1, Math.ceil(total / pageSize));
    const prev = h(
      'button',
      { type: 'button', 'data-testid': 'prev-page', disabled: page <= 0 },
      '‹ Previous',
    );
    const next = h(
      'button',
      { type: 'button', 'data-testid': 'next-page', disabled: pages !== undefined && page + 1 >= pages },
      'Next ›',
    );
    prev.addEventListener('click', () => {
      this.state.page = page - 1;
      void this.reload();
    });
    next.addEventListener('click', () => {
      this.state.page = page + 1;
      void this.reload();
    });
    mount(
      this.pager,
      prev,
      h(
        'span',
        { 'data-testid': 'page-info' },
        `Page ${page + 1}${pages ? ` of ${pages}` : ''} · ${total ?? '?'} rows`,
      ),
      next,
    );
  }

  /** Cursor grids (D31): Next follows nextCursor, Previous goes back through the cursors used. */
  private renderCursorPager(): void {
    const next = this.page.pagination.nextCursor ?? null;
    const prevButton = h(
      'button',
      { type: 'button', 'data-testid': 'prev-page', disabled: this.cursorTrail.length === 0 },
      '‹ Previous',
    );
    const nextButton = h('button', { type: 'button', 'data-testid': 'next-page', disabled: !next }, 'Next ›');
    prevButton.addEventListener('click', () => {
      this.state.cursor = this.cursorTrail.pop();
      void this.reload();
    });
    nextButton.addEventListener('click', () => {
      if (!next) return;
      this.cursorTrail.push(this.state.cursor);
      this.state.cursor = next;
      void this.reload();
    });
    mount(
      this.pager,
      prevButton,
      h('span', { 'data-testid': 'page-info' }, `Page ${this.cursorTrail.length + 1}`),
      nextButton,
    );
  }

  // -- export ------------------------------------------------------------------------------------

  private async exportAs(format: string, button: HTMLButtonElement): Promise<void> {
    button.disabled = true;
    try {
      this.setStatus(`Exporting ${format}…`);
      const file = await api.export(DATAVIEW, format, { ...this.state, filters: this.readFilters() });
      saveBlob(await api.download(file.downloadUrl), file.filename);
      this.setStatus(`Downloaded ${file.filename}`);
    } catch (err) {
      const e = describe(err);
      if (e.status !== 401) this.setStatus(problem(e), 'error');
    } finally {
      button.disabled = false;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Workflow: start one and follow its status
// ---------------------------------------------------------------------------------------------

function workflowPanel(setStatus: (text: string, kind?: 'info' | 'error') => void, grid: Grid): HTMLElement {
  const select = h('select', { 'data-testid': 'workflow-code', 'aria-label': 'Workflow' });
  const input = h('textarea', { rows: 2, 'data-testid': 'workflow-input', 'aria-label': 'Input (JSON)' });
  input.value = '{"customerId": 1, "tier": "bronze"}';
  const start = h('button', { type: 'button', class: 'primary', 'data-testid': 'workflow-start' }, 'Start');
  const state = h('div', { class: 'workflow-state', 'data-testid': 'workflow-status' });
  grid.onSelect = (row) => {
    input.value = JSON.stringify({ customerId: row.id, tier: row.tier });
  };
  void api
    .workflows()
    .then((list) => {
      const codes = new Map<string, string>();
      for (const w of list) codes.set(w.code, w.name);
      mount(
        select,
        [...codes].map(([code, name]) => h('option', { value: code }, name)),
      );
    })
    .catch((err: unknown) => {
      if (describe(err).status !== 401) setStatus(describe(err).message, 'error');
    });
  start.addEventListener('click', () => {
    void (async () => {
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(input.value) as Record<string, unknown>;
      } catch {
        setStatus('The workflow input is not JSON', 'error');
        return;
      }
      try {
        start.disabled = true;
        const started = await api.startWorkflow(select.value, body);
        await follow(started.instanceId ?? started.id, state);
      } catch (err) {
        const e = describe(err);
        if (e.status !== 401) setStatus(problem(e), 'error');
      } finally {
        start.disabled = false;
      }
    })();
  });
  return h(
    'section',
    { class: 'workflow', 'data-testid': 'workflow' },
    h('h2', {}, 'Workflow'),
    h('div', { class: 'toolbar' }, select, input, start),
    state,
  );
}

/** Polls the instance until it ends or waits for an approval. */
async function follow(id: number, state: HTMLElement): Promise<void> {
  let delay = 300;
  for (;;) {
    const instance: WorkflowInstance = await api.instance(id);
    const waiting = instance.waitingFor
      ? ` (waiting for ${instance.waitingFor.type} at ${instance.waitingFor.step})`
      : '';
    state.dataset.status = instance.status;
    mount(
      state,
      h(
        'span',
        { class: `wf wf-${instance.status.toLowerCase()}`, 'data-testid': 'workflow-state' },
        instance.status,
      ),
      ` instance ${instance.id} · ${instance.workflowCode} v${instance.version}`,
      instance.currentNode ? ` · step ${instance.currentNode}` : '',
      waiting,
      instance.error ? ` · error: ${JSON.stringify(instance.error)}` : '',
    );
    if (FINAL_STATES.has(instance.status) || instance.waitingFor) return;
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 1.5, 2000);
  }
}

// ---------------------------------------------------------------------------------------------

if (api.client.token) void showApp();
else void showLogin();
