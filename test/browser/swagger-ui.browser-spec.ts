import type { BrowserContext, Locator, Page } from 'playwright-core';
import { BEARER_SCHEME, TENANT_HEADER_SCHEME } from '../../src/common/http/api-docs';
import { DEMO_PASSWORD, TENANT, tenantHeader } from '../support/auth';
import {
  provokeCspViolation,
  startBrowserRig,
  watchCspViolations,
  withScreenshot,
  type BrowserRig,
} from './browser-support';

/**
 * Swagger UI at /api-docs as an integrator uses it: the Authorize dialog (tenant header, then the
 * token the sign-in answered), and "Try it out" → Execute on sign-in, a filtered entity list and a
 * dataview page, checking the status and body Swagger UI shows. One browser and page for the file.
 */
describe('Swagger UI at /api-docs (browser)', () => {
  let rig: BrowserRig;
  let context: BrowserContext;
  let page: Page;
  /** The CSP violations of the page so far (issue 21 #6: the page must work under its policy). */
  let cspViolations: string[] = [];
  let token = '';

  const step = (name: string, fn: () => Promise<void>): void =>
    it(name, () => withScreenshot(() => page, `swagger-ui ${name}`, fn), 30_000);

  /** The operation block of METHOD path, expanded, in "Try it out" mode. */
  const operation = async (method: string, path: string): Promise<Locator> => {
    const block = page
      .locator(`.opblock.opblock-${method.toLowerCase()}`)
      .filter({ has: page.locator(`.opblock-summary-path[data-path="${path}"]`) })
      .first();
    await block.locator('.opblock-summary').first().click();
    await block.locator('button.try-out__btn').click();
    await block.locator('button.execute').waitFor();
    return block;
  };

  /**
   * Fills the parameters named in `values` and empties every other text field of the operation:
   * Swagger UI pre-fills optional parameters with the document's examples.
   */
  const setParams = async (block: Locator, values: Record<string, string>): Promise<void> => {
    const rows = block.locator('tr[data-param-name]');
    for (let i = 0; i < (await rows.count()); i++) {
      const row = rows.nth(i);
      const name = (await row.getAttribute('data-param-name')) ?? '';
      const field = row
        .locator('td.parameters-col_description input[type=text], td.parameters-col_description textarea')
        .first();
      if ((await field.count()) === 0) continue;
      await field.fill(values[name] ?? '');
    }
  };

  /** Execute; the request's headers as sent, and the status and JSON body Swagger UI shows. */
  const execute = async (
    block: Locator,
    url: string,
  ): Promise<{ status: number; body: any; headers: Record<string, string>; url: string }> => {
    const sent = page.waitForRequest((r) => r.url().includes(url));
    await block.locator('button.execute').click();
    const request = await sent;
    await request.response();
    const status = block.locator('.live-responses-table .response .response-col_status').first();
    await status.waitFor();
    const text = await block
      .locator(
        '.live-responses-table .response-col_description pre.microlight, .live-responses-table .response-col_description pre',
      )
      .first()
      .textContent();
    return {
      status: Number((await status.textContent())?.trim()),
      body: JSON.parse(text ?? 'null'),
      headers: request.headers(),
      url: request.url(),
    };
  };

  /** Fills one scheme of the Authorize dialog and authorises it. */
  const authorize = async (scheme: string, value: string): Promise<void> => {
    await page.locator('.scheme-container .auth-wrapper > button.authorize').click();
    const container = page
      .locator('.modal-ux .auth-container')
      .filter({ has: page.locator('h4', { hasText: new RegExp(`^\\s*${scheme}\\s*\\(`) }) })
      .first();
    await container.waitFor();
    const logout = container.locator('button', { hasText: 'Logout' });
    if (await logout.isVisible()) await logout.click();
    await container.locator('input').first().fill(value);
    await container.locator('button.modal-btn.authorize').click();
    await logout.waitFor(); // "Authorized"
    await page.locator('.modal-ux button.close-modal').click();
    await page.locator('.modal-ux').waitFor({ state: 'detached' });
  };

  beforeAll(async () => {
    rig = await startBrowserRig('browser-swagger');
    context = await rig.browser.newContext({ viewport: { width: 1280, height: 1000 } });
    page = await context.newPage();
    cspViolations = await watchCspViolations(page);
    page.setDefaultTimeout(8_000);
  }, 60_000);

  afterAll(async () => {
    await context?.close();
    await rig?.close();
  });

  step('loads the document and the operations', async () => {
    const loaded = page.waitForResponse(
      (r) => r.url().endsWith('/api-docs/json') || r.url().includes('swagger-ui-init'),
    );
    await page.goto(`${rig.serviceUrl}/api-docs`);
    await loaded;
    await page.locator('.swagger-ui .information-container .title').waitFor();
    await page.locator('.opblock-summary-path[data-path="/api/v1/auth/signin"]').first().waitFor();
    expect(await page.locator('.opblock').count()).toBeGreaterThan(20);
  });

  step('authorises the tenant header and executes sign-in', async () => {
    await authorize(TENANT_HEADER_SCHEME, tenantHeader(TENANT.acme));
    const block = await operation('POST', '/api/v1/auth/signin');
    await block
      .locator('textarea.body-param__text')
      .fill(JSON.stringify({ email_id: 'admin@acme.test', password: DEMO_PASSWORD }));
    const { status, body, headers } = await execute(block, '/api/v1/auth/signin');
    expect(headers['x-tenant-id']).toBeTruthy();
    expect(headers.authorization).toBeUndefined();
    expect(status).toBe(200);
    expect(body.success).toBe(true);
    expect(typeof body.data.token).toBe('string');
    token = body.data.token;
  });

  step('authorises the token and executes a filtered list of customers', async () => {
    await authorize(BEARER_SCHEME, token);
    const block = await operation('GET', '/api/v1/{entity_code}');
    await setParams(block, {
      entity_code: 'customers',
      filters: '{"tier":"gold"}',
      limit: '5',
      sortBy: 'name',
    });
    const { status, body, headers } = await execute(block, '/api/v1/customers?');
    expect(headers.authorization).toBe(`Bearer ${token}`);
    expect(headers['x-tenant-id']).toBeTruthy();
    expect(status).toBe(200);
    const records = Array.isArray(body.data) ? body.data : body.data.records;
    expect(records).toHaveLength(5);
    for (const record of records) expect(record.tier).toBe('gold');
  });

  /** The value of every text field of the operation, by parameter name (what Execute would send). */
  const prefilled = async (block: Locator): Promise<Record<string, string>> => {
    const out: Record<string, string> = {};
    const rows = block.locator('tr[data-param-name]');
    for (let i = 0; i < (await rows.count()); i++) {
      const row = rows.nth(i);
      const field = row.locator('td.parameters-col_description input[type=text]').first();
      if ((await field.count()) === 0) continue;
      out[(await row.getAttribute('data-param-name')) ?? ''] = await field.inputValue();
    }
    return out;
  };

  step('executes the typed customer list as it opens: nothing pre-filled filters it', async () => {
    const block = await operation('GET', '/api/v1/customers');
    // No example is filled in as a value (issue 20: filters={"tier":"bronze"} was); only the
    // schema defaults, which are what the service uses when the parameter is absent.
    const filled = Object.entries(await prefilled(block)).filter(([, v]) => v !== '');
    expect(Object.fromEntries(filled)).toEqual({ skip: '0', sortOrder: 'asc' });
    const { status, body, url } = await execute(block, '/api/v1/customers');
    expect(status).toBe(200);
    expect(decodeURIComponent(url)).not.toContain('filters');
    const all = await rig.t.app.inject({
      method: 'GET',
      url: '/api/v1/customers',
      headers: { 'x-tenant-id': tenantHeader(TENANT.acme), authorization: `Bearer ${token}` },
    });
    expect(body.data.total).toBe(all.json().data.total);
    expect(new Set(body.data.records.map((r: { tier: string }) => r.tier)).size).toBeGreaterThan(1);
  });

  step('saves a customer with the body token read, leaving If-Match as it opens', async () => {
    const read = await rig.t.app.inject({
      method: 'GET',
      url: '/api/v1/customers/3',
      headers: { 'x-tenant-id': tenantHeader(TENANT.acme), authorization: `Bearer ${token}` },
    });
    const record = read.json().data as { credit_limit: number; lastModified: string };
    const block = await operation('PUT', '/api/v1/customers/{id}');
    const before = await prefilled(block);
    expect(before['If-Match']).toBe('');
    await block.locator('tr[data-param-name="id"] input[type=text]').fill('3');
    await block
      .locator('textarea.body-param__text')
      .fill(JSON.stringify({ credit_limit: record.credit_limit + 10, lastModified: record.lastModified }));
    const { status, body, headers } = await execute(block, '/api/v1/customers/3');
    expect(headers['if-match']).toBeUndefined();
    expect(status).toBe(200);
    expect(body.data.credit_limit).toBe(record.credit_limit + 10);
  });

  step('executes a dataview page', async () => {
    const block = await operation('GET', '/api/v1/dataviews/{dvc_code}/data');
    await setParams(block, {
      dvc_code: 'customers_grid',
      page: '1',
      pageSize: '5',
      filters: '[{"fieldCode":"tier","operator":"equals","value":"silver"}]',
    });
    const { status, body, url } = await execute(block, '/api/v1/dataviews/customers_grid/data?');
    expect(status).toBe(200);
    expect(decodeURIComponent(url)).toContain(
      'filters=[{"fieldCode":"tier","operator":"equals","value":"silver"}]',
    );
    expect(body.data).toHaveLength(5);
    expect(body.pagination).toEqual({ page: 1, pageSize: 5, total: expect.any(Number) });
    for (const row of body.data) expect(row.tier).toBe('silver');
  });

  step('ran every step under its Content-Security-Policy without a violation', async () => {
    const docs = await fetch(`${rig.serviceUrl}/api-docs`);
    expect(docs.headers.get('content-security-policy')).toMatch(/default-src 'self'.*script-src 'self'/);
    expect(cspViolations).toEqual([]);
    // The watch does report what the policy refuses.
    expect(await provokeCspViolation(context, `${rig.serviceUrl}/api-docs`)).toEqual(
      expect.arrayContaining([expect.stringContaining('csp-probe.invalid')]),
    );
  });
});
