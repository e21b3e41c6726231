/**
 * The Import button of an entity grid and its dialog (D53, issue 26): choose a CSV or XLSX file and
 * the mode, see a dry run (counts and the first errors), then run the import for real and follow
 * its progress to the end, with the error file when rows failed. Offered to users whose role may
 * create records of the grid's entity; the server decides the rest (feature, profile) and its
 * refusal is shown in the dialog.
 */
import { describe, type ImportJob, type ImportOptions, type PageApi } from './api';
import { h, mount, saveBlob } from './dom';

const FINAL = new Set(['COMPLETED', 'FAILED', 'CANCELLED']);
/** Errors listed in the dialog; the error file has them all. */
const SHOWN_ERRORS = 10;

/** D9: `<action>:<resource>`, `*` matching any part (as src/profile/access/permissions.ts). */
function grants(granted: string, action: string, resource: string): boolean {
  const parts = granted === '*' ? ['*', '*'] : granted.split(':');
  if (parts.length !== 2) return false;
  return (parts[0] === '*' || parts[0] === action) && (parts[1] === '*' || parts[1] === resource);
}

/** Whether the role grants `create` on the entity (`create:<entity>` or `create:entity`). */
export function mayCreate(permissions: readonly string[], entity: string): boolean {
  return permissions.some((p) => grants(p, 'create', entity) || grants(p, 'create', 'entity'));
}

export interface ImportTarget {
  api: PageApi;
  entity: string;
  /** Fields offered as the upsert key besides `id`. */
  keyFields: string[];
  /** After an import wrote rows: the grid reloads. */
  onImported: () => Promise<void> | void;
  setStatus: (text: string, kind?: 'info' | 'error') => void;
}

/** Puts the Import button into `slot` when the signed-in user's role may create records of the entity. */
export async function offerImport(slot: HTMLElement, target: ImportTarget): Promise<void> {
  let permissions: string[];
  try {
    permissions = await target.api.permissions();
  } catch {
    slot.dataset.decided = 'true';
    return; // no button; a 401 has already signed the page out
  }
  slot.dataset.decided = 'true'; // tests wait for the decision, button or not
  if (!mayCreate(permissions, target.entity)) return;
  const button = h('button', { type: 'button', 'data-testid': 'import-open' }, 'Import');
  const dialog = importDialog(target);
  button.addEventListener('click', () => dialog.open());
  mount(slot, button, dialog.element);
}

function importDialog(target: ImportTarget): { element: HTMLDialogElement; open(): void } {
  const { api, entity } = target;
  const file = h('input', { type: 'file', accept: '.csv,.xlsx,text/csv', 'data-testid': 'import-file' });
  const mode = h(
    'select',
    { 'data-testid': 'import-mode', 'aria-label': 'Mode' },
    h('option', { value: 'create' }, 'Create new records'),
    h('option', { value: 'upsert' }, 'Update or create (upsert) by key'),
  );
  const key = h(
    'select',
    { 'data-testid': 'import-key', 'aria-label': 'Key' },
    ['id', ...target.keyFields.filter((f) => f !== 'id')].map((f) => h('option', { value: f }, f)),
  );
  const keyLabel = h('label', { hidden: true }, 'Key ', key);
  const onError = h(
    'select',
    { 'data-testid': 'import-on-error', 'aria-label': 'On error' },
    h('option', { value: 'skip' }, 'Skip failing rows, import the others'),
    h('option', { value: 'abort' }, 'All or nothing'),
  );
  const preview = h('button', { type: 'button', 'data-testid': 'import-preview' }, 'Preview (dry run)');
  const run = h(
    'button',
    { type: 'button', class: 'primary', 'data-testid': 'import-run', disabled: true },
    'Import',
  );
  const cancel = h('button', { type: 'button', 'data-testid': 'import-cancel', hidden: true }, 'Stop');
  const close = h('button', { type: 'button', 'data-testid': 'import-close' }, 'Close');
  const result = h('div', { class: 'import-result', 'data-testid': 'import-result', 'aria-live': 'polite' });
  const element = h(
    'dialog',
    { class: 'import-dialog', 'data-testid': 'import-dialog', 'aria-label': `Import ${entity}` },
    h('h3', {}, `Import ${entity}`),
    h(
      'div',
      { class: 'import-form' },
      h('label', {}, 'File (CSV or XLSX) ', file),
      h('label', {}, 'Mode ', mode),
      keyLabel,
      h('label', {}, 'On error ', onError),
    ),
    h('div', { class: 'buttons' }, preview, run, cancel, close),
    result,
  );

  /** The dry run that the Import button would repeat for real; cleared when the choice changes. */
  let previewed: ImportOptions | null = null;
  let running: string | null = null;
  let busy = false;
  const options = (dryRun: boolean): ImportOptions => ({
    mode: mode.value === 'upsert' ? 'upsert' : 'create',
    ...(mode.value === 'upsert' ? { key: key.value } : {}),
    dryRun,
    onError: onError.value === 'abort' ? 'abort' : 'skip',
  });
  const buttons = (): void => {
    preview.disabled = busy || !file.files?.length;
    run.disabled = busy || previewed === null;
    cancel.hidden = running === null;
    close.disabled = busy;
  };
  const changed = (): void => {
    keyLabel.hidden = mode.value !== 'upsert';
    previewed = null;
    if (!busy) mount(result);
    buttons();
  };
  for (const input of [file, mode, key, onError]) input.addEventListener('change', changed);

  const start = async (dryRun: boolean): Promise<void> => {
    const chosen = file.files?.[0];
    if (!chosen) return;
    busy = true;
    buttons();
    const opts = options(dryRun);
    try {
      mount(result, h('p', {}, dryRun ? 'Checking the file…' : 'Importing…'));
      let job = await api.startImport(entity, chosen, opts);
      running = job.importId;
      buttons();
      let delay = 200;
      for (;;) {
        show(result, job, api, entity);
        if (FINAL.has(job.status)) break;
        await new Promise((resolve) => setTimeout(resolve, delay));
        delay = Math.min(delay * 1.5, 1500);
        job = await api.importStatus(job.importId);
      }
      previewed = dryRun && job.status === 'COMPLETED' ? opts : null;
      if (!dryRun && job.created + job.updated > 0) {
        target.setStatus(
          `Imported ${entity}: ${job.created} created, ${job.updated} updated, ${job.failed} failed`,
        );
        await target.onImported();
      }
    } catch (err) {
      const e = describe(err);
      if (e.status === 401) return;
      previewed = null;
      mount(
        result,
        h('p', { class: 'import-problem', 'data-testid': 'import-problem' }, `${e.code}: ${e.message}`),
      );
    } finally {
      busy = false;
      running = null;
      buttons();
    }
  };
  preview.addEventListener('click', () => void start(true));
  run.addEventListener('click', () => {
    // The real run does what the preview showed; a second run needs a new preview.
    const shown = previewed;
    previewed = null;
    if (shown) void start(false);
  });
  cancel.addEventListener('click', () => {
    if (running !== null) void api.cancelImport(running).catch(() => undefined);
  });
  close.addEventListener('click', () => element.close());
  buttons();
  return {
    element,
    open: () => {
      if (!element.open) element.showModal();
      buttons();
    },
  };
}

/** The job as the dialog shows it: status and progress, the counts, the first errors, the error file. */
function show(result: HTMLElement, job: ImportJob, api: PageApi, entity: string): void {
  const done = FINAL.has(job.status);
  const would = job.dryRun ? 'would be ' : '';
  const counts = done
    ? `${job.total ?? job.processed} rows: ${job.created} ${would}created, ${job.updated} ${would}updated, ` +
      `${job.failed} failed${job.skipped ? `, ${job.skipped} not written (all or nothing)` : ''}`
    : `${job.processed}${job.total !== null ? ` of ${job.total}` : ''} rows`;
  const errorFile = job.errorFileUrl
    ? h(
        'button',
        { type: 'button', class: 'link', 'data-testid': 'import-error-file' },
        'Download the failed rows (CSV)',
      )
    : null;
  errorFile?.addEventListener('click', () => {
    void api
      .download(job.errorFileUrl as string)
      .then((blob) => saveBlob(blob, `${entity}-import-errors.csv`))
      .catch(() => undefined);
  });
  result.dataset.status = job.status;
  result.dataset.dryRun = String(job.dryRun);
  mount(
    result,
    h(
      'p',
      { 'data-testid': 'import-state' },
      h('strong', {}, `${job.dryRun ? 'Dry run' : 'Import'} ${job.status}`),
      done
        ? null
        : h('progress', {
            'data-testid': 'import-progress',
            max: job.total ?? undefined,
            value: job.total ? job.processed : undefined,
          }),
    ),
    h('p', { 'data-testid': 'import-counts' }, counts),
    job.error
      ? h(
          'p',
          { class: 'import-problem', 'data-testid': 'import-problem' },
          `${job.error.code}: ${job.error.message}`,
        )
      : null,
    job.ignoredColumns.length
      ? h('p', { 'data-testid': 'import-ignored' }, `Ignored columns: ${job.ignoredColumns.join(', ')}`)
      : null,
    job.errors.length
      ? h(
          'ul',
          { class: 'import-errors', 'data-testid': 'import-errors' },
          job.errors
            .slice(0, SHOWN_ERRORS)
            .map((e) =>
              h(
                'li',
                { 'data-testid': `import-error-${e.row}` },
                `Row ${e.row}${e.field ? ` · ${e.field}` : ''}: ${e.error}`,
              ),
            ),
          job.failed > Math.min(job.errors.length, SHOWN_ERRORS)
            ? h('li', {}, `… ${job.failed - Math.min(job.errors.length, SHOWN_ERRORS)} more`)
            : null,
        )
      : null,
    errorFile,
  );
}
