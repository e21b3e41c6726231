import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Locator, Page, Request } from 'playwright-core';
import { LiveChangesService } from '../../src/entity/live-changes.service';
import { authHeaders, DEMO_PASSWORD, signin, TENANT } from '../support/auth';
import { startBrowserRig, watchCspViolations, withScreenshot, type BrowserRig } from './browser-support';

/**
 * The reference SPA's import dialog (issue 26, D53) and live grid (issue 25, D55) in headless
 * Chromium through the tenant proxy. Its own rig (and database): the import adds customers, which
 * the counts of reference-page.browser-spec.ts do not expect. The steps build on each other.
 */
describe('reference page: import and live grid (browser)', () => {
  let rig: BrowserRig;
  let context: BrowserContext;
  let page: Page;
  let cspViolations: string[] = [];
  let base: string;
  let token = '';
  /** Page B: someone else in another browser context. */
  let contextB: BrowserContext | undefined;
  let pageB: Page;
  /** Page A's change-stream requests and ticket answers. */
  const streams: string[] = [];
  const tickets: number[] = [];
  const files = mkdtempSync(join(tmpdir(), 'browser-import-'));

  const step = (name: string, fn: () => Promise<void>): void =>
    it(name, () => withScreenshot(() => page, `reference-page-import-live ${name}`, fn), 30_000);

  const byId = (id: string, on: Page = page): Locator => on.getByTestId(id);
  const withText = (id: string, text: RegExp | string, on: Page = page): Promise<void> =>
    byId(id, on).filter({ hasText: text }).first().waitFor();
  const rowIds = async (on: Page = page): Promise<string[]> =>
    Promise.all(
      (await on.locator('[data-testid=grid-table] tbody tr').all()).map(
        async (row) => (await row.getAttribute('data-id')) ?? '',
      ),
    );
  const signIn = async (on: Page, email = 'admin@acme.test'): Promise<void> => {
    const loaded = on.waitForResponse((r) => r.url().includes('/dataviews/customers_grid/data') && r.ok());
    await on.goto(`${base}/`);
    await byId('login-screen', on).waitFor();
    await byId('email', on).fill(email);
    await byId('password', on).fill(DEMO_PASSWORD);
    await byId('sign-in', on).click();
    await loaded;
    await byId('grid-table', on).locator('tbody tr').first().waitFor();
  };
  const searchFor = async (on: Page, text: string): Promise<void> => {
    const loaded = on.waitForResponse(
      (r) =>
        r.url().includes('/dataviews/customers_grid/data') &&
        (text ? r.url().includes(`search=${encodeURIComponent(text)}`) : !r.url().includes('search=')),
    );
    await byId('search', on).fill(text);
    await byId('search', on).press('Enter');
    await (await loaded).finished();
    await on.locator('[data-testid=grid][aria-busy=false]').waitFor();
  };
  const customersWithEmail = async (email: string): Promise<Record<string, unknown>[]> => {
    const res = await rig.t.app.inject({
      method: 'GET',
      url: `/api/v1/customers?filters[email]=${encodeURIComponent(email)}`,
      headers: authHeaders(TENANT.acme, token),
    });
    expect(res.statusCode).toBe(200);
    return res.json().data.records as Record<string, unknown>[];
  };

  beforeAll(async () => {
    rig = await startBrowserRig('browser-spa-import');
    base = `http://acme.localhost:${rig.proxyPort}`;
    context = await rig.browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    cspViolations = await watchCspViolations(page);
    page.setDefaultTimeout(8_000);
    page.on('request', (r) => {
      if (r.url().includes('/changes?')) streams.push(r.url());
    });
    page.on('response', (r) => {
      if (r.url().endsWith('/api/v1/changes/tickets')) tickets.push(r.status());
    });
    token = (await signin(rig.t.app, TENANT.acme, 'admin@acme.test')).token;
  }, 60_000);

  afterAll(async () => {
    await contextB?.close();
    await context?.close();
    await rig?.close();
    rmSync(files, { recursive: true, force: true });
  });

  step('offers no Import button to a user whose role may not create customers', async () => {
    await signIn(page, 'viewer@acme.test');
    await page.locator('[data-testid=import-slot][data-decided=true]').waitFor({ state: 'attached' });
    expect(await byId('import-open').count()).toBe(0);
    await byId('logout').click();
    await byId('login-screen').waitFor();
  });

  step('imports a CSV: a dry run shows the counts and the bad row, the real run adds the rows', async () => {
    await signIn(page);
    await withText('page-info', /· 50 rows/);
    await page.locator('[data-testid=import-slot][data-decided=true]').waitFor({ state: 'attached' });
    // The export's own headers (labels), two good rows and one with an e-mail that is none.
    const csv = join(files, 'new-customers.csv');
    writeFileSync(
      csv,
      'Name,E-mail,Tier,Credit limit\r\n' +
        'Imported Alpha,imported-alpha@acme.example,gold,1500\r\n' +
        'Imported Beta,not-an-email,silver,200\r\n' +
        'Imported Gamma,imported-gamma@acme.example,bronze,300\r\n',
    );
    await byId('import-open').click();
    await byId('import-dialog').waitFor();
    expect(await byId('import-preview').isDisabled()).toBe(true); // no file yet
    await byId('import-file').setInputFiles(csv);
    expect(await byId('import-run').isDisabled()).toBe(true); // not before a dry run

    const started = page.waitForRequest(
      (r) => r.method() === 'POST' && r.url().includes('/customers/imports'),
    );
    await byId('import-preview').click();
    const dry = await started;
    expect(dry.url()).toContain('dryRun=true');
    expect(dry.url()).toContain('onError=skip');
    expect(dry.headers()['content-type']).toBe('text/csv');
    expect((await dry.response())?.status()).toBe(202);
    await page.locator('[data-testid=import-result][data-status=COMPLETED][data-dry-run=true]').waitFor();
    await withText('import-counts', '3 rows: 2 would be created, 0 would be updated, 1 failed');
    await withText('import-error-3', /Row 3 · email: .+/);
    expect(await customersWithEmail('imported-alpha@acme.example')).toEqual([]); // a dry run writes nothing

    const real = page.waitForRequest(
      (r) => r.method() === 'POST' && r.url().includes('/customers/imports') && !r.url().includes('dryRun'),
    );
    const polled = page.waitForRequest(
      (r) => r.method() === 'GET' && /\/api\/v1\/imports\/[A-Za-z0-9_-]{22}$/.test(r.url()),
    );
    const reloaded = page.waitForResponse(
      (r) => r.url().includes('/dataviews/customers_grid/data') && r.ok(),
    );
    await byId('import-run').click();
    expect((await (await real).response())?.status()).toBe(202);
    await polled; // progress is followed on the job
    await page.locator('[data-testid=import-result][data-status=COMPLETED][data-dry-run=false]').waitFor();
    await withText('import-counts', '3 rows: 2 created, 0 updated, 1 failed');
    await reloaded; // the grid refreshes after the import
    await withText('status', 'Imported customers: 2 created, 0 updated, 1 failed');
    expect(await byId('import-run').isDisabled()).toBe(true); // a second run needs a new preview

    const download = page.waitForEvent('download');
    await byId('import-error-file').click();
    const errors = readFileSync(await (await download).path(), 'utf8')
      .trim()
      .split(/\r?\n/);
    expect(errors[0]).toMatch(/^Name,E-mail,Tier,Credit limit,error$/);
    expect(errors).toHaveLength(2);
    expect(errors[1]).toMatch(/^Imported Beta,not-an-email,silver,200,.+/);

    await byId('import-close').click();
    expect(await byId('import-dialog').isVisible()).toBe(false);
    await withText('page-info', /· 52 rows/);
    await searchFor(page, 'Imported');
    expect(await rowIds()).toHaveLength(2);
    const names = await page
      .locator('[data-testid=grid-table] tbody td[data-testid$="-name"]')
      .allTextContents();
    expect(names).toEqual(['Imported Alpha', 'Imported Gamma']);
    await searchFor(page, '');
  });

  step(
    'follows changes made elsewhere: page B edits a customer, page A shows it highlighted without a reload',
    async () => {
      await page.locator('[data-testid=grid][data-live=live]').waitFor();
      // The stream was opened with a ticket alone: EventSource sends no token.
      expect(tickets.length).toBeGreaterThan(0);
      expect(streams[0]).toMatch(/\/api\/v1\/dataviews\/customers_grid\/changes\?ticket=[^&]+$/);
      contextB = await rig.browser.newContext({ viewport: { width: 1280, height: 900 } });
      pageB = await contextB.newPage();
      pageB.setDefaultTimeout(8_000);
      await signIn(pageB);

      const id = (await rowIds())[0];
      let reloads = 0;
      const countReloads = (r: Request): void => {
        if (r.url().includes('/dataviews/customers_grid/data')) reloads++;
      };
      page.on('request', countReloads);
      await byId(`row-${id}`, pageB).getByTestId('action-edit').click();
      await byId('edit-credit_limit', pageB).fill('98765');
      await byId('save', pageB).click();
      await withText('status', `Saved customers ${id}`, pageB);

      await page.locator(`[data-testid=row-${id}].live-changed`).waitFor();
      await withText(`cell-${id}-credit_limit`, '$98,765.00');
      page.off('request', countReloads);
      expect(reloads).toBe(0); // updated in place, not reloaded
    },
  );

  step(
    'shows the conflict panel on a row being edited here when it changes elsewhere, before saving',
    async () => {
      const id = (await rowIds())[1];
      let puts = 0;
      const countPuts = (r: Request): void => {
        if (r.method() === 'PUT') puts++;
      };
      page.on('request', countPuts);
      await byId(`row-${id}`).getByTestId('action-edit').click();
      await byId('edit-credit_limit').fill('4321');

      await byId(`row-${id}`, pageB).getByTestId('action-edit').click();
      await byId('edit-credit_limit', pageB).fill('5555');
      await byId('save', pageB).click();
      await withText('status', `Saved customers ${id}`, pageB);

      await byId('conflict').waitFor();
      await withText('conflict-credit_limit', /4321\s*5555/);
      await withText('status', /Conflict/);
      expect(puts).toBe(0); // before any save
      expect(await byId('edit-credit_limit').inputValue()).toBe('4321'); // my edit is kept
      page.off('request', countPuts);

      // Mine wins: saved with the current token; page B sees it live in turn.
      const saved = page.waitForResponse(
        (r) => r.request().method() === 'PUT' && r.url().endsWith(`/customers/${id}`),
      );
      await byId('conflict-overwrite').click();
      expect((await saved).status()).toBe(200);
      await withText(`cell-${id}-credit_limit`, '$4,321.00');
      await pageB.locator(`[data-testid=row-${id}].live-changed`).waitFor();
      await withText(`cell-${id}-credit_limit`, '$4,321.00', pageB);
    },
  );

  step('shows a row created elsewhere and drops a row deleted elsewhere', async () => {
    await searchFor(page, 'Imported');
    expect(await rowIds()).toHaveLength(2);
    const created = await rig.t.app.inject({
      method: 'POST',
      url: '/api/v1/customers',
      headers: authHeaders(TENANT.acme, token),
      payload: { name: 'Imported Delta', email: 'imported-delta@acme.example', tier: 'bronze' },
    });
    expect(created.statusCode).toBe(201);
    await byId(`row-${created.json().data.id}`).waitFor(); // the page reloaded: it is in the search
    expect(await rowIds()).toHaveLength(3);

    const [alpha] = (await customersWithEmail('imported-alpha@acme.example')) as { id: number }[];
    const deleted = await rig.t.app.inject({
      method: 'DELETE',
      url: `/api/v1/customers/${alpha.id}`,
      headers: authHeaders(TENANT.acme, token),
    });
    expect(deleted.statusCode).toBe(200);
    await byId(`row-${alpha.id}`).waitFor({ state: 'detached' });
    await withText('page-info', /· 2 rows/);
    await searchFor(page, '');
  });

  step(
    'reconnects with a fresh ticket after losing the stream, and reloads the page it may have missed',
    async () => {
      await page.locator('[data-testid=grid][data-live=live]').waitFor();
      const before = { tickets: tickets.length, streams: streams.length };
      const id = (await rowIds())[2];
      // The service ends the page's streams (as a restart or a proxy's idle cut would).
      const service: unknown = rig.t.app.get(LiveChangesService);
      const live = service as { byTenant: Map<string, Set<{ close(): void }>> };
      for (const set of live.byTenant.values()) for (const stream of [...set]) stream.close();
      await page.locator('[data-testid=grid][data-live=reconnecting]').waitFor();
      // A change while the page is cut off: no event reaches it.
      const read = await rig.t.app.inject({
        method: 'GET',
        url: `/api/v1/customers/${id}`,
        headers: authHeaders(TENANT.acme, token),
      });
      const changed = await rig.t.app.inject({
        method: 'PUT',
        url: `/api/v1/customers/${id}`,
        headers: { ...authHeaders(TENANT.acme, token), 'if-match': read.headers.etag as string },
        payload: { credit_limit: 2468 },
      });
      expect(changed.statusCode).toBe(200);
      const reloaded = page.waitForResponse(
        (r) => r.url().includes('/dataviews/customers_grid/data') && r.ok(),
      );
      await page.locator('[data-testid=grid][data-live=live]').waitFor({ timeout: 15_000 });
      await reloaded;
      await withText(`cell-${id}-credit_limit`, '$2,468.00');
      expect(tickets.slice(before.tickets)).toContain(201); // a new ticket, not the spent one again
      const reconnected = streams.slice(before.streams);
      expect(reconnected.length).toBeGreaterThan(0);
      expect(reconnected).not.toContain(streams[before.streams - 1]);
    },
  );

  step('ran under its Content-Security-Policy without a violation', async () => {
    expect(cspViolations).toEqual([]);
  });
});
