import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';
import { DatabaseService } from '../../src/database/database.service';
import { authHeaders, signin, TENANT, tenantHeader } from '../support/auth';
import { startTestApp, type TestApp } from '../support/test-app';
import { withScreenshot } from './browser-support';
import { findChromium } from './chromium';

type Json = Record<string, any>;

/** What a fetch in the page came to: its status and the headers and body it could read, or the error. */
interface FetchOutcome {
  status?: number;
  etag?: string | null;
  body?: string;
  error?: string;
}

/**
 * Issue 34 #9: a single-page app on another origin (a page served on one localhost port, the
 * service on another, CORS_ORIGINS naming the page's origin) through Chromium's real CORS checks:
 * an inline edit (PATCH with x-tenant-id, authorization and content-type: a preflight) and a live
 * stream resumed with Last-Event-ID (a non-safelisted header: a preflight too). Both were refused
 * by the preflight before PATCH and last-event-id were allowed.
 */
describe('CORS from a second origin (browser, issue 34 #9)', () => {
  let t: TestApp;
  let pageServer: Server;
  let browser: Browser;
  let page: Page;
  let service = '';
  let token = '';

  const step = (name: string, fn: () => Promise<void>): void =>
    it(name, () => withScreenshot(() => page, `cors-second-origin ${name}`, fn), 30_000);

  const inject = (method: 'GET' | 'POST', url: string, payload?: Json) =>
    t.app.inject({ method, url, headers: authHeaders(TENANT.acme, token), ...(payload ? { payload } : {}) });

  /** A fetch run by the page's own script, so the browser applies CORS as it would to an SPA's. */
  const fetchInPage = (url: string, init: Json, readUntil?: string): Promise<FetchOutcome> =>
    page.evaluate(
      `(async () => {
        const [url, init, readUntil] = ${JSON.stringify([url, init, readUntil ?? null])};
        const abort = new AbortController();
        try {
          const res = await fetch(url, { ...init, signal: abort.signal });
          let body = '';
          if (readUntil === null) body = await res.text();
          else {
            // A stream: read until the awaited text arrives (or 8 s), then let it go.
            const reader = res.body.getReader();
            const decoder = new TextDecoder();
            const deadline = Date.now() + 8000;
            while (!body.includes(readUntil) && Date.now() < deadline) {
              const { value, done } = await Promise.race([
                reader.read(),
                new Promise((r) => setTimeout(() => r({ done: false }), 500)),
              ]);
              if (done) break;
              if (value) body += decoder.decode(value, { stream: true });
            }
            abort.abort();
          }
          return { status: res.status, etag: res.headers.get('etag'), body };
        } catch (e) {
          return { error: String(e) };
        }
      })()`,
    );

  beforeAll(async () => {
    pageServer = createServer((_req, res) => {
      res
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        .end('<!doctype html><title>SPA</title>');
    });
    await new Promise<void>((r) => pageServer.listen(0, '127.0.0.1', r));
    const origin = `http://localhost:${(pageServer.address() as AddressInfo).port}`;
    t = await startTestApp({ label: 'cors-second-origin', env: { CORS_ORIGINS: origin } });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    service = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    token = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    const path = findChromium().path;
    if (!path) throw new Error('Chromium not found (global-setup checks it)');
    browser = await chromium.launch({
      executablePath: path,
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-dev-shm-usage',
        '--host-resolver-rules=MAP localhost 127.0.0.1',
      ],
    });
    page = await browser.newPage();
    await page.goto(`${origin}/`);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    pageServer?.closeAllConnections();
    await new Promise((r) => pageServer?.close(r));
  });

  step('edits a grid row inline with PATCH, reading the answer and its ETag', async () => {
    const customers = await inject('GET', '/api/v1/customers?limit=1');
    const order = await inject('POST', '/api/v1/orders', {
      customer_id: customers.json().data.records[0].id,
      amount: 25,
      status: 'new',
      ordered_at: '2026-11-02',
    });
    expect(order.statusCode).toBe(201);
    const { id, lastModified } = order.json().data as Json;
    const outcome = await fetchInPage(`${service}/api/v1/dataviews/orders_grid/rows/${id}`, {
      method: 'PATCH',
      headers: {
        'x-tenant-id': tenantHeader(TENANT.acme),
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ lastModified, status: 'paid' }),
    });
    expect(outcome.error).toBeUndefined();
    expect(outcome.status).toBe(200);
    expect(JSON.parse(outcome.body ?? '{}').data).toMatchObject({ id, status: 'paid' });
    expect(outcome.etag).toMatch(/^"/);
    const stored = await inject('GET', `/api/v1/orders/${id}`);
    expect(stored.json().data.status).toBe('paid');
  });

  step('resumes a live stream with Last-Event-ID and gets the events after it', async () => {
    // The resume point: the tenant's last event before a first write, which the resume must bring.
    const [{ last }] = await t.app
      .get(DatabaseService)
      .dataSource.query(
        `SELECT COALESCE(MAX(evt_sequence), 0) AS last FROM app_events WHERE evt_tenant_id = 1`,
      );
    const first = await inject('POST', '/api/v1/customers', {
      name: 'Before Resume',
      email: `before-${Date.now()}@x.example`,
    });
    expect(first.statusCode).toBe(201);
    const opened = await fetchInPage(
      `${service}/api/v1/customers/changes`,
      {
        headers: {
          'x-tenant-id': tenantHeader(TENANT.acme),
          authorization: `Bearer ${token}`,
          'Last-Event-ID': String(last),
        },
      },
      'Before Resume',
    );
    expect(opened.error).toBeUndefined();
    expect(opened.status).toBe(200);
    const lastId = [...(opened.body ?? '').matchAll(/^id: ?(\d+)$/gm)].pop()?.[1];
    expect(lastId).toBeDefined();
    const second = await inject('POST', '/api/v1/customers', {
      name: 'After Resume',
      email: `after-${Date.now()}@x.example`,
    });
    expect(second.statusCode).toBe(201);
    const resumed = await fetchInPage(
      `${service}/api/v1/customers/changes`,
      {
        headers: {
          'x-tenant-id': tenantHeader(TENANT.acme),
          authorization: `Bearer ${token}`,
          'Last-Event-ID': lastId,
        },
      },
      'After Resume',
    );
    expect(resumed.error).toBeUndefined();
    expect(resumed.status).toBe(200);
    expect(resumed.body).toContain('After Resume');
    expect(resumed.body).not.toContain('Before Resume');
  });
});
