/**
 * The live grid (D55, issue 25): while a dataview grid is open it follows the dataview's change
 * stream, `GET /api/v1/dataviews/{dvc_code}/changes`, whose rows are shaped as the grid's own
 * (columns, masking, row filter, default filters). A browser's EventSource sends no headers, so
 * each connection first takes a single-use ticket (`POST /api/v1/changes/tickets`) and passes it
 * as `?ticket=`. EventSource's own retry would reuse a spent ticket: on an error the source is
 * closed and the page reconnects with a fresh one, after a growing pause.
 *
 * What a change does to the grid (LiveGrid.apply): a row changed elsewhere is updated in place and
 * flashes; a row being edited here (edit form, focused inline editor, save in flight) keeps its
 * values and token and shows the conflict panel instead; a deleted row disappears; a created row,
 * a `reset` and a reconnect make the grid reload its page (once nothing is being edited).
 */
import { describe, type PageApi, type Row } from './api';

export type ChangeKind = 'created' | 'updated' | 'deleted';

/** The `data` of an event (D55). */
export interface Change {
  id: number | string;
  lastModified: string | null;
  row: Row | null;
}

/** What the grid lends the live connection (main.ts's Grid). */
export interface LiveView {
  /** The row of the page shown with this key, if any, and its element. */
  rowById(id: string): Row | undefined;
  rowElement(id: string): HTMLElement | null;
  /** Puts `row` in place of the row of the same key and renders it; its element, to flash. */
  replaceRow(row: Row): HTMLElement | null;
  /** Takes the row off the page shown. */
  removeRow(id: string): void;
  /** The row (without an id: any row) is open in the edit form. */
  isEditing(id?: string): boolean;
  /** A save of the row (without an id: of any row) is in flight. */
  isSaving(id?: string): boolean;
  /** A reload of the page is in flight. */
  isLoading(): boolean;
  /** An editor's text as the field's value. */
  fieldValue(code: string, before: unknown, raw: string): unknown;
  /** The conflict panel: my changes, and the fields to show besides. */
  showConflict(row: Row, changes: Record<string, unknown>, also: string[]): void;
  reload(): Promise<void>;
}

/** How long a row changed elsewhere stays highlighted. */
const FLASH_MS = 3_000;
/** The pause before a change waiting for a save or a reload, or a reload waiting for an edit, is tried again. */
const SETTLE_MS = 300;
const EVENTS: readonly ChangeKind[] = ['created', 'updated', 'deleted'];
/**
 * Whether the stream takes `?lastEventId=` (a resume without the header EventSource cannot set
 * on a new connection). Without it a reconnect reloads the page instead: nothing is missed.
 */
const RESUME_BY_QUERY = false;
const EDITORS = 'select, input:not([type=checkbox]), textarea';

function time(value: unknown): number {
  return typeof value === 'string' ? Date.parse(value) : Number.NaN;
}

/** An editor (not a checkbox) inside `within` has the focus. */
function editorFocused(within: Element | null | undefined): boolean {
  const focused = document.activeElement;
  return focused instanceof HTMLElement && focused.matches(EDITORS) && within?.contains(focused) === true;
}

/** The grid as the live connection acts on it (see the file's comment). */
export class LiveGrid {
  private refetchTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly view: LiveView) {}

  /** Applies one change to the grid. */
  apply(kind: ChangeKind, change: Change): void {
    const id = String(change.id);
    if (kind === 'created') {
      this.refetch();
      return;
    }
    const before = this.view.rowById(id);
    if (!before) return; // not on the page shown
    if (kind === 'deleted') {
      this.view.removeRow(id);
      this.refetch();
      return;
    }
    if (!change.row) return;
    // A save of the row or a reload is in flight: its answer first, then this change if still newer
    // (our own save's echo is then no newer than the row shown).
    if (this.view.isSaving(id) || this.view.isLoading()) {
      setTimeout(() => this.apply(kind, change), SETTLE_MS);
      return;
    }
    const row: Row = { ...change.row, lastModified: change.lastModified ?? undefined };
    // An event no newer than the row shown (our own save's echo, or an older change).
    const shown = time(before.lastModified);
    const changed = time(change.lastModified);
    if (!Number.isNaN(shown) && !Number.isNaN(changed) && changed <= shown) return;
    if (this.view.isEditing(id) || editorFocused(this.view.rowElement(id))) {
      this.conflict(id, before, row);
      return;
    }
    const element = this.view.replaceRow(row);
    if (!element) return;
    element.classList.add('live-changed');
    setTimeout(() => element.classList.remove('live-changed'), FLASH_MS);
  }

  /**
   * A row being edited here changed elsewhere: its values and token stay as read (a save would be
   * a 409), and the conflict panel shows at once the fields I changed and those they changed.
   */
  private conflict(id: string, before: Row, current: Row): void {
    const mine: Record<string, unknown> = {};
    const inline = `inline-${id}-`;
    const editors = this.view
      .rowElement(id)
      ?.querySelectorAll<HTMLInputElement | HTMLSelectElement>(
        '[data-testid^="edit-"], [data-testid^="inline-"]',
      );
    for (const editor of editors ?? []) {
      const testid = editor.dataset.testid ?? '';
      const code = testid.startsWith(inline) ? testid.slice(inline.length) : testid.replace(/^edit-/, '');
      const value = this.view.fieldValue(code, before[code], editor.value);
      if (value !== before[code]) mine[code] = value;
    }
    const theirs = Object.keys(current).filter(
      (code) => code !== 'lastModified' && JSON.stringify(current[code]) !== JSON.stringify(before[code]),
    );
    this.view.showConflict(before, mine, theirs);
  }

  /** Reloads the page shown, soon, once nothing is being edited (created rows, a reset, a reconnect). */
  refetch(): void {
    clearTimeout(this.refetchTimer);
    this.refetchTimer = setTimeout(() => {
      const tbody = document.querySelector('[data-testid=grid-table] tbody');
      if (this.view.isEditing() || this.view.isSaving() || editorFocused(tbody)) this.refetch();
      else void this.view.reload();
    }, SETTLE_MS);
  }
}

export type LiveState = 'connecting' | 'live' | 'reconnecting' | 'stopped';

/** One grid's subscription; `stop()` when the grid goes away. */
export class LiveChanges {
  private source: EventSource | null = null;
  private lastEventId = '';
  private attempt = 0;
  private retry: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;

  constructor(
    private readonly api: PageApi,
    private readonly dataview: string,
    private readonly grid: LiveGrid,
    private readonly onState: (state: LiveState) => void = () => undefined,
  ) {}

  start(): void {
    this.stopped = false;
    void this.connect();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.retry);
    this.source?.close();
    this.source = null;
    this.onState('stopped');
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const again = this.attempt > 0;
    this.onState(again ? 'reconnecting' : 'connecting');
    let ticket: string;
    try {
      ticket = (await this.api.changesTicket()).ticket;
    } catch (err) {
      const e = describe(err);
      // Signed out (the page shows the login screen), or no right to follow this grid: stay still.
      if (e.status === 401 || e.status === 403 || e.status === 404) this.stop();
      else this.reconnectLater();
      return;
    }
    if (this.stopped) return;
    const query = new URLSearchParams({ ticket });
    if (RESUME_BY_QUERY && this.lastEventId) query.set('lastEventId', this.lastEventId);
    const source = new EventSource(
      `/api/v1/dataviews/${encodeURIComponent(this.dataview)}/changes?${query.toString()}`,
    );
    this.source = source;
    source.addEventListener('open', () => {
      this.attempt = 0;
      this.onState('live');
      // Changes made while disconnected were not replayed: read the page again.
      if (again && !(RESUME_BY_QUERY && this.lastEventId)) this.grid.refetch();
    });
    for (const kind of EVENTS)
      source.addEventListener(kind, (event) => {
        const message = event as MessageEvent<string>;
        if (message.lastEventId) this.lastEventId = message.lastEventId;
        try {
          this.grid.apply(kind, JSON.parse(message.data) as Change);
        } catch {
          // A malformed event is skipped; the next reload shows the truth.
        }
      });
    source.addEventListener('reset', (event) => {
      const message = event as MessageEvent<string>;
      if (message.lastEventId) this.lastEventId = message.lastEventId;
      this.grid.refetch();
    });
    source.addEventListener('error', () => {
      // EventSource would retry with the same URL, hence the same (spent) ticket: reconnect anew.
      source.close();
      if (this.source === source) this.source = null;
      this.reconnectLater();
    });
  }

  /** 1 s, 2 s, 4 s … up to 30 s, with jitter. */
  private reconnectLater(): void {
    if (this.stopped) return;
    this.onState('reconnecting');
    const pause = Math.min(30_000, 1_000 * 2 ** this.attempt) * (0.75 + Math.random() / 2);
    this.attempt++;
    clearTimeout(this.retry);
    this.retry = setTimeout(() => void this.connect(), pause);
  }
}
