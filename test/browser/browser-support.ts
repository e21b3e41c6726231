import type { FastifyInstance } from 'fastify';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { buildTenantProxy } from '../../src/tenant/proxy/tenant-proxy';
import { chromiumMissingMessage, findChromium } from './chromium';
import { startTestApp, type TestApp } from '../support/test-app';
import { TEST_SECRETS } from '../support/test-database';

const ROOT = join(__dirname, '..', '..');
export const ARTIFACTS = join(ROOT, 'test', 'artifacts');

/** The machine's Chromium (chromium.ts: CHROMIUM_PATH, else on PATH); global-setup.ts checked it. */
function chromiumPath(): string {
  const { path, tried } = findChromium();
  if (!path) throw new Error(chromiumMissingMessage(tried));
  return path;
}

export interface BrowserRig {
  t: TestApp;
  /** http://127.0.0.1:<service port> */
  serviceUrl: string;
  /** The tenant proxy's port: http://acme.localhost:<proxyPort>/ */
  proxyPort: number;
  browser: Browser;
  close(): Promise<void>;
}

function portOf(server: { address(): AddressInfo | string | null }): number {
  return (server.address() as AddressInfo).port;
}

/**
 * The service (demo data, a real port), the tenant proxy in front of it (acme → 1, globex → 2, as
 * the proxy's DatabaseTenantSource would answer for the demo tenants) and a headless Chromium.
 * The reference page is built first (esbuild, well under a second when it is stale).
 */
export async function startBrowserRig(label: string): Promise<BrowserRig> {
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-if-stale.js'), '--web-only', '--quiet'], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  const exportDir = mkdtempSync(join(tmpdir(), `browser-${label}-`));
  const t = await startTestApp({ label, env: { EXPORT_DIR: exportDir, WORKFLOW_POLL_MS: '50' } });
  let proxy: FastifyInstance | undefined;
  let browser: Browser | undefined;
  try {
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const servicePort = portOf(t.app.getHttpServer());
    const tenants: Record<string, number> = { acme: 1, globex: 2 };
    proxy = await buildTenantProxy({
      upstream: `http://127.0.0.1:${servicePort}`,
      baseDomain: 'localhost',
      tenantEncryptionKey: TEST_SECRETS.TENANT_ENCRYPTION_KEY,
      resolveTenant: async (code) => tenants[code],
    });
    await proxy.listen({ host: '127.0.0.1', port: 0 });
    browser = await chromium.launch({
      executablePath: chromiumPath(),
      headless: true,
      // *.localhost is loopback in Chromium already; the rule pins it to the IPv4 the proxy listens on.
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-dev-shm-usage',
        '--host-resolver-rules=MAP *.localhost 127.0.0.1',
      ],
    });
  } catch (err) {
    await browser?.close();
    await proxy?.close();
    await t.close();
    throw err;
  }
  const started = { proxy, browser };
  return {
    t,
    serviceUrl: `http://127.0.0.1:${portOf(t.app.getHttpServer())}`,
    proxyPort: portOf(proxy.server),
    browser,
    close: async () => {
      await started.browser.close();
      await started.proxy.close();
      await t.close();
      rmSync(exportDir, { recursive: true, force: true });
    },
  };
}

/**
 * Runs a test step; on failure saves a full-page screenshot to test/artifacts/<file>-<step>.png
 * before rethrowing.
 */
export async function withScreenshot(
  page: () => Page | undefined,
  name: string,
  fn: () => Promise<void>,
): Promise<void> {
  try {
    await fn();
  } catch (err) {
    const current = page();
    if (current && !current.isClosed()) {
      mkdirSync(ARTIFACTS, { recursive: true });
      const base = join(
        ARTIFACTS,
        name
          .replace(/[^a-z0-9]+/gi, '-')
          .replace(/^-|-$/g, '')
          .toLowerCase(),
      );
      // The whole page when it is of a sane height (the grid), else the viewport (Swagger UI).
      const height = await current.evaluate<number>('document.documentElement.scrollHeight').catch(() => 0);
      await current.screenshot({ path: `${base}.png`, fullPage: height < 4000 }).catch(() => undefined);
    }
    throw err;
  }
}

/**
 * Records the Content-Security-Policy violations of a page across its navigations (issue 21 #6):
 * the browser's `securitypolicyviolation` events, reported to the test by an exposed function from
 * an init script (neither is governed by the page's CSP), and its console reports of refused
 * loads. Returns the list, which grows as the page runs.
 */
export async function watchCspViolations(page: Page): Promise<string[]> {
  const violations: string[] = [];
  page.on('console', (message) => {
    if (/Content Security Policy|Refused to (load|execute|apply|connect|frame)/i.test(message.text()))
      violations.push(`console: ${message.text()}`);
  });
  await page.exposeFunction('__reportCspViolation', (text: string) => {
    violations.push(text);
  });
  // As text: this file is compiled without the DOM's types.
  await page.addInitScript(`document.addEventListener('securitypolicyviolation', (e) => {
    window.__reportCspViolation(e.effectiveDirective + ' blocked ' + (e.blockedURI || '(inline)') +
      ' at ' + e.sourceFile + ':' + e.lineNumber);
  });`);
  return violations;
}

/**
 * Proves the watch can fail: a fresh page of `context` opens `url` and adds an image from another
 * origin, which the page policy refuses; the violations recorded are returned.
 */
export async function provokeCspViolation(context: BrowserContext, url: string): Promise<string[]> {
  const probe = await context.newPage();
  try {
    const violations = await watchCspViolations(probe);
    await probe.goto(url);
    await probe.evaluate(`(() => {
      const img = document.createElement('img');
      img.src = 'https://csp-probe.invalid/pixel.png';
      document.body.appendChild(img);
    })()`);
    for (let i = 0; i < 50 && violations.length === 0; i++) await probe.waitForTimeout(20);
    return violations;
  } finally {
    await probe.close();
  }
}
