import { readFileSync } from 'node:fs';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { authHeaders, DEMO_PASSWORD, signin, TENANT, tenantHeader } from '../support/auth';
import {
  provokeCspViolation,
  startBrowserRig,
  watchCspViolations,
  withScreenshot,
  type BrowserRig,
} from './browser-support';

/**
 * The reference SPA (web/, issue 15) in headless Chromium, reached as a deployment reaches it:
 * through the tenant proxy at http://acme.localhost:<port>/ (the proxy adds the tenant header; the
 * page sends none). One browser and one page for the file; the steps build on each other.
 */
describe('reference page through the tenant proxy (browser)', () => {
  let rig: BrowserRig;
  let context: BrowserContext;
  let page: Page;
  /** The CSP violations of the page so far (issue 21 #6: the page must work under its policy). */
  let cspViolations: string[] = [];
  let base: string;
  /** A token of the same user for the "someone else" of the conflict, from outside the browser. */
  let token = '';

  const step = (name: string, fn: () => Promise<void>): void =>
    it(name, () => withScreenshot(() => page, `reference-page ${name}`, fn), 30_000);

  const byId = (id: string): Locator => page.getByTestId(id);
  const withText = (id: string, text: RegExp | string): Promise<void> =>
    byId(id).filter({ hasText: text }).first().waitFor();
  const rowIds = async (): Promise<string[]> =>
    Promise.all(
      (await page.locator('[data-testid=grid-table] tbody tr').all()).map(
        async (row) => (await row.getAttribute('data-id')) ?? '',
      ),
    );
  const cellTexts = (field: string): Promise<string[]> =>
    page.locator(`[data-testid=grid-table] tbody td[data-testid$="-${field}"]`).allTextContents();
  /** Clicks (or presses a key), then waits for the data request it causes (the grid re-renders from its answer). */
  const clickAndLoad = async (locator: Locator, key?: string): Promise<void> => {
    const loaded = page.waitForResponse((r) => r.url().includes('/dataviews/customers_grid/data'));
    if (key) await locator.press(key);
    else await locator.click();
    await (await loaded).finished();
    await page.locator('[data-testid=grid][aria-busy=false]').waitFor();
  };
  const signIn = async (email = 'admin@acme.test'): Promise<void> => {
    await byId('login-screen').waitFor();
    await byId('email').fill(email);
    await byId('password').fill(DEMO_PASSWORD);
    const loaded = page.waitForResponse((r) => r.url().includes('/dataviews/customers_grid/data') && r.ok());
    await byId('sign-in').click();
    await loaded;
    await byId('grid-table').locator('tbody tr').first().waitFor();
  };

  beforeAll(async () => {
    rig = await startBrowserRig('browser-spa');
    base = `http://acme.localhost:${rig.proxyPort}`;
    context = await rig.browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    cspViolations = await watchCspViolations(page);
    page.setDefaultTimeout(8_000); // a failing wait ends well inside the test's time, with a screenshot
    token = (await signin(rig.t.app, TENANT.acme, 'admin@acme.test')).token;
  }, 60_000);

  afterAll(async () => {
    await context?.close();
    await rig?.close();
  });

  step('shows the tenant login screen from tenant-config (name, logo, colours)', async () => {
    const answer = page.waitForResponse((r) => r.url().endsWith('/api/v1/auth/tenant-config'));
    await page.goto(`${base}/`);
    const config = await answer;
    expect(config.status()).toBe(200);
    expect(config.request().headers()['x-tenant-id']).toBeUndefined(); // the proxy adds it
    await withText('tenant-name', 'Acme Corporation');
    await byId('tenant-logo').waitFor();
    expect(await byId('tenant-logo').getAttribute('src')).toMatch(/^data:image\//);
    const primary = await page.evaluate<string>(
      "getComputedStyle(document.documentElement).getPropertyValue('--primary')",
    );
    expect(primary.trim().toLowerCase()).toBe('#1f4e79');
    expect(await page.title()).toBe('Acme Corporation');
  });

  step('refuses a wrong password, then signs in and renders customers_grid from its config', async () => {
    await byId('email').fill('admin@acme.test');
    await byId('password').fill('not-the-password');
    await byId('sign-in').click();
    await withText('login-message', /./);
    await signIn();
    const headers = await page.locator('[data-testid=grid-table] thead th').allTextContents();
    expect(headers.map((h) => h.replace(/[▲▼]/g, '').trim())).toEqual([
      '', // the row selection column (display.selectionMode multiple)
      'Name',
      'E-mail',
      'Tier',
      'Credit limit',
      'Actions',
    ]);
    expect(await rowIds()).toHaveLength(25); // display.pageSize
    await withText('page-info', /Page 1 of 2 · 50 rows/);
    // default sort name asc, shown on its header; the sum of credit_limit in the footer
    expect(await byId('header-name').getAttribute('aria-sort')).toBe('ascending');
    expect(await byId('aggregates').textContent()).toMatch(/\$[\d,]+/);
    const names = await cellTexts('name');
    expect([...names].sort((a, b) => a.localeCompare(b, 'en', { sensitivity: 'base' }))).toEqual(names);
  });

  step('pages and sorts by clicking a header', async () => {
    const first = await rowIds();
    await clickAndLoad(byId('next-page'));
    await withText('page-info', /Page 2 of 2/);
    const second = await rowIds();
    expect(second).toHaveLength(25);
    expect(second.filter((id) => first.includes(id))).toEqual([]);
    await clickAndLoad(byId('prev-page'));
    await withText('page-info', /Page 1 of 2/);

    await clickAndLoad(byId('header-credit_limit'));
    await page.locator('[data-testid=header-credit_limit][aria-sort=ascending]').waitFor();
    await clickAndLoad(byId('header-credit_limit'));
    await page.locator('[data-testid=header-credit_limit][aria-sort=descending]').waitFor();
    const amounts = (await cellTexts('credit_limit')).map((t) => Number(t.replace(/[^\d.]/g, '')));
    expect(amounts).toEqual([...amounts].sort((a, b) => b - a));
  });

  step('filters, searches and groups', async () => {
    await byId('filter-tier').selectOption('gold');
    await withText('page-info', /· 10 rows/);
    expect(new Set(await cellTexts('tier'))).toEqual(new Set(['gold']));

    await byId('filter-tier').selectOption('');
    await withText('page-info', /· 50 rows/);
    await byId('filter-name').fill('Anderson');
    await clickAndLoad(byId('apply-filters'));
    const names = await cellTexts('name');
    expect(names.length).toBeGreaterThan(0);
    for (const name of names) expect(name.toLowerCase()).toContain('anderson');
    await byId('filter-name').fill('');

    const search = byId('search');
    await search.fill('CUSTOMER1');
    const searched = page.waitForResponse((r) => r.url().includes('search=CUSTOMER1'));
    await search.press('Enter');
    await searched;
    await withText('page-info', /· 11 rows/); // customer1, customer10…19
    await search.fill('');
    const cleared = page.waitForResponse(
      (r) => r.url().includes('/customers_grid/data') && !r.url().includes('search='),
    );
    await search.press('Enter');
    await cleared;
    await withText('page-info', /· 50 rows/);

    const grouped = page.waitForResponse((r) => r.url().includes('groupBy=tier'));
    await byId('group-by').selectOption('tier');
    await grouped;
    await withText('group-gold', 'gold (10)');
    await clickAndLoad(byId('group-gold'));
    expect(new Set(await cellTexts('tier'))).toEqual(new Set(['gold']));
    await byId('group-by').selectOption('');
    await withText('page-info', /· 50 rows/);
  });

  step('edits a row inline: saved with If-Match, and the change survives a reload', async () => {
    const id = (await rowIds())[0];
    const email = (await byId(`cell-${id}-email`).textContent()) ?? '';
    await byId(`row-${id}`).getByTestId('action-edit').click();
    await byId('edit-credit_limit').fill('12345');
    const saved = page.waitForRequest(
      (r) => r.method() === 'PUT' && r.url().endsWith(`/api/v1/customers/${id}`),
    );
    await byId('save').click();
    const put = await saved;
    expect(put.headers()['if-match']).toMatch(/^"\d{4}-\d\d-\d\dT.*Z"$/);
    expect((await put.response())?.status()).toBe(200);
    expect(JSON.parse(put.postData() ?? '{}')).toEqual({ credit_limit: 12345 });
    await withText('status', `Saved customers ${id}`);
    await withText(`cell-${id}-credit_limit`, '$12,345.00');

    await page.reload();
    await byId('grid-table').locator('tbody tr').first().waitFor(); // still signed in (token stored)
    await byId('search').fill(email); // the default sort again: find the row
    await clickAndLoad(byId('search'), 'Enter');
    expect(await rowIds()).toEqual([id]);
    await withText(`cell-${id}-credit_limit`, '$12,345.00');
    await byId('search').fill('');
    await clickAndLoad(byId('search'), 'Enter');
    const read = await rig.t.app.inject({
      method: 'GET',
      url: `/api/v1/customers/${id}`,
      headers: authHeaders(TENANT.acme, token),
    });
    expect(read.json().data.credit_limit).toBe(12345);
  });

  step('shows a 409 as a conflict to resolve: overwrite, or reload theirs', async () => {
    const id = (await rowIds())[1];
    // Someone else saves the row after the page read it.
    const saveElsewhere = async (credit: number): Promise<void> => {
      const read = await rig.t.app.inject({
        method: 'GET',
        url: `/api/v1/customers/${id}`,
        headers: authHeaders(TENANT.acme, token),
      });
      const res = await rig.t.app.inject({
        method: 'PUT',
        url: `/api/v1/customers/${id}`,
        headers: { ...authHeaders(TENANT.acme, token), 'if-match': read.headers.etag as string },
        payload: { credit_limit: credit },
      });
      expect(res.statusCode).toBe(200);
    };
    await byId(`row-${id}`).getByTestId('action-edit').click();
    await saveElsewhere(777);
    await byId('edit-credit_limit').fill('4242');
    await byId('save').click();
    await byId('conflict').waitFor();
    await withText('conflict-credit_limit', /4242\s*777/);
    await withText('status', /Conflict/);
    await clickAndLoad(byId('conflict-overwrite'));
    await withText(`cell-${id}-credit_limit`, '$4,242.00');
    expect(await byId('conflict').isHidden()).toBe(true);

    await byId(`row-${id}`).getByTestId('action-edit').click();
    await saveElsewhere(888);
    await byId('edit-credit_limit').fill('1111');
    await byId('save').click();
    await withText('conflict-credit_limit', /1111\s*888/);
    await clickAndLoad(byId('conflict-reload'));
    await withText(`cell-${id}-credit_limit`, '$888.00');
  });

  step('shows a record’s history (who, when, what) and restores a version', async () => {
    // The row of the conflict step: credit_limit 777, then 4242, then 888.
    const id = (await rowIds())[1];
    await byId(`row-${id}`).getByTestId('action-history').click();
    const entries = page.locator('[data-testid=history] li[data-version]');
    await entries.first().waitFor();
    expect(await entries.first().textContent()).toMatch(/updated.*admin@acme\.test.*credit_limit: 4242 → 888/s);
    const second = entries.nth(1);
    expect(await second.textContent()).toMatch(/credit_limit: 777 → 4242/);
    const version = Number(await second.getAttribute('data-version'));
    const restored = page.waitForResponse(
      (r) => r.request().method() === 'POST' && r.url().endsWith(`/api/v1/customers/${id}/restore`),
    );
    await second.getByTestId(`restore-v${version}`).click();
    expect((await restored).status()).toBe(200);
    await withText('status', new RegExp(`Restored customers ${id} to version ${version} \\(skipped: phone\\)`));
    await withText(`cell-${id}-credit_limit`, '$4,242.00');
    await entries.filter({ hasText: /restored/ }).first().waitFor();
    expect(await entries.first().textContent()).toMatch(/restored.*credit_limit: 888 → 4242/s);
    await byId('history-close').click();
    expect(await byId('history').isHidden()).toBe(true);
  });

  step('exports CSV and XLSX and downloads the files', async () => {
    await byId('filter-tier').selectOption('gold');
    await withText('page-info', /· 10 rows/);
    const csvDownload = page.waitForEvent('download');
    const exported = page.waitForResponse((r) => r.url().endsWith('/dataviews/customers_grid/export'));
    await byId('export-csv').click();
    const body = await (await exported).json();
    expect(body.data.downloadUrl).toMatch(/^\/api\/v1\/downloads\//);
    const csv = await csvDownload;
    expect(csv.suggestedFilename()).toMatch(/^customers_\d{4}-\d\d-\d\d\.csv$/);
    const text = readFileSync(await csv.path(), 'utf8');
    const lines = text.trim().split(/\r?\n/);
    expect(lines[0]).toBe('Name,E-mail,Tier,Credit limit');
    expect(lines).toHaveLength(11); // the header and the 10 gold customers: the filter went along
    await withText('status', /Downloaded customers_.*\.csv/);

    const xlsxDownload = page.waitForEvent('download');
    await byId('export-excel').click();
    const xlsx = await xlsxDownload;
    expect(xlsx.suggestedFilename()).toMatch(/^customers_\d{4}-\d\d-\d\d\.xlsx$/);
    expect(
      readFileSync(await xlsx.path())
        .subarray(0, 2)
        .toString(),
    ).toBe('PK'); // a zip
    await byId('filter-tier').selectOption('');
    await withText('page-info', /· 50 rows/);
  });

  step('starts a workflow and follows its status to COMPLETED', async () => {
    await byId('workflow-code').locator('option[value=customer_onboarding]').waitFor({ state: 'attached' });
    const id = (await rowIds())[2];
    await byId(`cell-${id}-name`).click(); // selecting a row fills the input
    const input = JSON.parse(await byId('workflow-input').inputValue());
    expect(input.customerId).toBe(Number(id));
    if (input.tier === 'gold')
      await byId('workflow-input').fill(JSON.stringify({ ...input, tier: 'silver' }));
    const started = page.waitForResponse((r) => r.url().endsWith('/workflows/customer_onboarding/start'));
    await byId('workflow-start').click();
    expect((await started).status()).toBe(202);
    await page.locator('[data-testid=workflow-status][data-status=COMPLETED]').waitFor({ timeout: 20_000 });
    await withText('workflow-status', /COMPLETED instance \d+ · customer_onboarding v\d+/);
  });

  step('runs bulk actions on ticked rows: a per-row summary, a confirmation where required', async () => {
    const ids = (await rowIds()).slice(3, 5);
    expect(await byId('bulk-make_silver').isDisabled()).toBe(true); // nothing ticked yet
    for (const id of ids) await byId(`select-${id}`).check();
    const acted = page.waitForResponse((r) =>
      r.url().includes('/dataviews/customers_grid/actions/make_silver'),
    );
    await clickAndLoad(byId('bulk-make_silver'));
    expect((await acted).request().postDataJSON()).toEqual({ ids: ids.map(Number) });
    await withText('bulk-result', 'Make silver: 2 succeeded, 0 failed');
    for (const id of ids) expect(await byId(`cell-${id}-tier`).textContent()).toBe('silver');

    // A customer of its own to delete (demo customers have orders: 409 dependents_exist).
    const created = await rig.t.app.inject({
      method: 'POST',
      url: '/api/v1/customers',
      headers: authHeaders(TENANT.acme, token),
      payload: { name: 'Bulk Target', email: 'bulk-target@acme.example', tier: 'bronze' },
    });
    expect(created.statusCode).toBe(201);
    const target = String(created.json().data.id);
    await byId('search').fill('Bulk Target');
    await clickAndLoad(byId('search'), 'Enter');
    await byId(`select-${target}`).check();
    let sent = 0;
    page.on('request', (r) => {
      if (r.url().includes('/actions/delete_selected')) sent++;
    });
    page.once('dialog', (dialog) => void dialog.dismiss());
    await byId('bulk-delete_selected').click();
    expect(sent).toBe(0); // dismissed: nothing was sent
    page.once('dialog', (dialog) => void dialog.accept());
    await clickAndLoad(byId('bulk-delete_selected'));
    expect(sent).toBe(1);
    await withText('bulk-result', 'Delete: 1 succeeded, 0 failed');
    expect(await rowIds()).not.toContain(target);
    await byId('search').fill('');
    await clickAndLoad(byId('search'), 'Enter');
  });

  step('edits an order status inline on orders_grid (cursor pages), with the 409 panel', async () => {
    const asAdmin = authHeaders(TENANT.acme, token);
    const loaded = page.waitForResponse((r) => r.url().includes('/dataviews/orders_grid/data') && r.ok());
    await page.goto(`${base}/?dataview=orders_grid`);
    await loaded;
    await byId('grid-table').locator('tbody tr').first().waitFor();
    await withText('page-info', 'Page 1');
    const [id] = await rowIds();
    // The amount is shown but not editable inline; the status is.
    expect(await byId(`cell-${id}-amount`).locator('input, select').count()).toBe(0);
    const select = byId(`inline-${id}-status`);
    const target = (await select.inputValue()) === 'paid' ? 'shipped' : 'paid';
    const saved = page.waitForResponse((r) => r.url().endsWith(`/dataviews/orders_grid/rows/${id}`));
    await select.selectOption(target);
    expect((await saved).status()).toBe(200);
    await withText('status', `Saved orders ${id}`);
    const stored = async () =>
      (await rig.t.app.inject({ method: 'GET', url: `/api/v1/orders/${id}`, headers: asAdmin })).json()
        .data as {
        status: string;
        lastModified: string;
      };
    expect((await stored()).status).toBe(target);

    // Someone else saves the order while its editor has the focus here: the live grid keeps the
    // row as read and shows the conflict panel (an unfocused row would be updated in place), and
    // the inline save is a 409 with the same panel.
    await byId(`inline-${id}-status`).focus();
    const other = await rig.t.app.inject({
      method: 'PUT',
      url: `/api/v1/orders/${id}`,
      headers: asAdmin,
      payload: { status: 'new', lastModified: (await stored()).lastModified },
    });
    expect(other.statusCode).toBe(200);
    await byId('conflict-status').locator('.theirs').filter({ hasText: 'new' }).waitFor();
    const mine = target === 'paid' ? 'shipped' : 'paid';
    const stale = page.waitForResponse((r) => r.url().endsWith(`/dataviews/orders_grid/rows/${id}`));
    await byId(`inline-${id}-status`).selectOption(mine);
    expect((await stale).status()).toBe(409);
    await byId('conflict-status').waitFor();
    expect(await byId('conflict-status').locator('.theirs').textContent()).toBe('new');
    const overwritten = page.waitForResponse((r) => r.url().endsWith(`/dataviews/orders_grid/rows/${id}`));
    await byId('conflict-overwrite').click();
    expect((await overwritten).status()).toBe(200);
    expect((await stored()).status).toBe(mine);

    const back = page.waitForResponse((r) => r.url().includes('/dataviews/customers_grid/data') && r.ok());
    await page.goto(`${base}/`);
    await back;
    await byId('grid-table').locator('tbody tr').first().waitFor();
  });

  step('returns to the login screen after logout', async () => {
    const logout = page.waitForResponse((r) => r.url().endsWith('/api/v1/auth/logout'));
    await byId('logout').click();
    expect((await logout).status()).toBe(200);
    await withText('login-message', 'You have signed out.');
    expect(await page.evaluate<string | null>("localStorage.getItem('mtb.token')")).toBeNull();
    await page.reload();
    await byId('login-screen').waitFor();
  });

  step('returns to the login screen on a 401 (token revoked server-side)', async () => {
    await signIn('viewer@acme.test');
    const stored = await page.evaluate<string | null>("localStorage.getItem('mtb.token')");
    expect(stored).toBeTruthy();
    const revoked = await rig.t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/logout',
      headers: { 'x-tenant-id': tenantHeader(TENANT.acme), authorization: `Bearer ${stored}` },
    });
    expect(revoked.statusCode).toBe(200);
    const refused = page.waitForResponse((r) => r.url().includes('/customers_grid/data'));
    await byId('next-page').click();
    expect((await refused).status()).toBe(401);
    await withText('login-message', 'Your session has ended. Please sign in again.');
    expect(await page.evaluate<string | null>("localStorage.getItem('mtb.token')")).toBeNull();
  });

  step('is served at the service port too: a pasted tenant header instead of the proxy', async () => {
    const html = await fetch(`${rig.serviceUrl}/`);
    expect(html.status).toBe(200);
    expect(html.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const js = await fetch(`${rig.serviceUrl}/ui/app.js`);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    const missing = await fetch(`${rig.serviceUrl}/ui/nope.js`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe('NOT_FOUND'); // the envelope, as before

    await page.goto(`${rig.serviceUrl}/`);
    await withText('login-message', /No tenant/);
    await byId('tenant-header').fill(tenantHeader(TENANT.acme));
    await signIn();
    await withText('app-tenant', 'Acme Corporation');
    await withText('page-info', /· 50 rows/);
  });

  step('ran every step under its Content-Security-Policy without a violation', async () => {
    for (const url of [`${rig.serviceUrl}/`, `${rig.serviceUrl}/ui/app.js`])
      expect((await fetch(url)).headers.get('content-security-policy')).toMatch(
        /default-src 'self'.*script-src 'self'/,
      );
    // Through the tenant proxy too: the policy reaches the browser as the service sent it.
    const viaProxy = await page.goto(`${base}/`);
    expect(viaProxy?.headers()['content-security-policy']).toMatch(/script-src 'self'/);
    await byId('root').waitFor();
    expect(cspViolations).toEqual([]);
    expect(await provokeCspViolation(context, `${base}/`)).toEqual(
      expect.arrayContaining([expect.stringContaining('csp-probe.invalid')]),
    );
  });
});
