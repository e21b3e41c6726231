import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildService } from '../support/service-cluster';
import { waitFor } from '../support/test-app';

const ROOT = join(__dirname, '..', '..');

/**
 * The README's curl walk-through, pasted into a shell as a new user would, followed by the examples
 * of the docs pages that build on its variables: every ```sh block preceded by `<!-- walkthrough -->`,
 * page by page in this order, run by bash against the built service on the embedded default in a
 * fresh directory. Only the port and the way the CLI is started differ (a test cannot take port
 * 8008 or rely on npm's output).
 */
const WALKTHROUGH_PAGES = [
  'README.md',
  'docs/entities-and-profiles.md',
  'docs/dataviews-and-exports.md',
  'docs/workflows.md',
  'docs/integrators.md',
];
const MARKED_BLOCK = /<!-- walkthrough -->\n```sh\n([\s\S]*?)```/g;

function walkthroughScript(port: number): string {
  const blocks = WALKTHROUGH_PAGES.flatMap((page) => {
    const text = readFileSync(join(ROOT, page), 'utf8');
    const found = [...text.matchAll(MARKED_BLOCK)].map((m) => m[1]);
    expect({ page, blocks: found.length > 0 }).toEqual({ page, blocks: true });
    return found;
  });
  expect(blocks.length).toBeGreaterThanOrEqual(10);
  return ['set -u', ...blocks]
    .join('\n')
    .replaceAll('http://localhost:8008', `http://127.0.0.1:${port}`)
    .replaceAll(
      'npm run -s tenant-header --',
      `node ${join(ROOT, 'dist', 'tenant', 'cli', 'tenant-header.js')}`,
    );
}

describe("The README's curl walk-through", () => {
  let cwd: string;
  let child: ChildProcess;
  const port = 20000 + Math.floor(Math.random() * 20000);

  beforeAll(async () => {
    buildService();
    cwd = mkdtempSync(join(tmpdir(), 'mtb-readme-'));
    child = spawn(process.execPath, [join(ROOT, 'dist', 'main.js')], {
      cwd,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: cwd,
        LOG_FORMAT: 'json',
        LOG_LEVEL: 'warn',
        API_PORT: String(port),
      },
      stdio: 'ignore',
    });
    await waitFor(async () => {
      const res = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined);
      return res?.status === 200;
    }, 30000);
  });

  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(cwd, { recursive: true, force: true });
  });

  it('should leave no marked block outside the pages it runs', () => {
    const docs = readdirSync(join(ROOT, 'docs')).map((f) => `docs/${f}`);
    const marked = docs.filter((page) => readFileSync(join(ROOT, page), 'utf8').includes('<!-- walkthrough -->'));
    expect(marked.every((page) => WALKTHROUGH_PAGES.includes(page))).toBe(true);
  });

  it('should run pasted in order, each step answering as the README and the docs say', () => {
    const out = execFileSync('bash', ['-c', walkthroughScript(port)], {
      cwd,
      encoding: 'utf8',
      timeout: 60000,
    });
    const expectations: Array<[string, RegExp]> = [
      ['tenant-config', /"tenant_name":"Acme Corporation"/],
      ['profile', /"email_id":"admin@acme.test"/],
      ['gold customers', /"records":\[\{"id":\d+[^\]]*"tier":"gold"/],
      ['GET with ETag', /etag: "\d{4}-\d{2}-\d{2}T[\d:.]+Z"/i],
      ['saved', /"credit_limit":14500,"lastModified":"[^"]+"\}/],
      ['stale save', /"code":"CONFLICT"/],
      ['delete', /"deletedAt":"[^"]+"/],
      ['restrict', /"dependentEntities":\[\{"entity":"orders","count":\d+\}\]/],
      ['cascade', /"success":true,"data":\{"success":true,"deletedAt"/],
      ['user created by root', /"email_id":"new.user@acme.test"/],
      ['ADMIN may not write users', /"code":"FORBIDDEN"/],
      ['logout', /"message":"Logged out"/],
      ['revoked', /"code":"TOKEN_REVOKED"/],
      ['list sorted DESC', /"records":\[/],
      ['order by id', /"data":\{"id":3,"customer_id":3/],
      ['/records page', /"count":10,"total":1[01]\d/],
      ['If-Match save', /"credit_limit":7500/],
      ['mass assignment', /"field":"cus_tenant_id","error":"is set by the service and cannot be written"/],
      ['id out of range', /"code":"NOT_FOUND"/],
      ['filter out of range', /"field":"filters\[customer_id\]"/],
      ['dataview config', /"dvc_code":"customers_grid"/],
      ['dataview config 304', /HTTP\/1\.1 304/],
      ['dataview page', /"pagination":\{"page":0,"pageSize":3,"total":\d+\}/],
      ['dataview filter refused', /"field":"filters\[0\]\.operator"/],
      ['dataview groups', /"key":"bronze","count":\d+/],
      ['dataview next cursor page', /"pagination":\{"pageSize":5,"nextCursor":"[^"]+"\}/],
      ['dataview bad cursor', /"field":"cursor","error":"invalid"/],
      ['export downloaded as CSV', /\n[^\n{]*,[^\n{]*\n[^\n{]*gold/],
      ['workflows listed', /"code":"customer_onboarding"[^\]]*"version":2/],
      [
        'silver onboarding logs',
        /"message":"Onboarding customer 2 \(silver\), v2"[\s\S]*"message":"Workflow completed"/,
      ],
      ['gold waits for approval', /"type":"approval","step":"approve_gold"/],
      ['starter may not approve', /"code":"FORBIDDEN"/],
      [
        'approved by another admin',
        /"success":true,"data":\{"id":\d+,"workflowCode":"customer_onboarding"[^\n]*"waitingFor":null/,
      ],
      ['gold completed', /COMPLETED\s*\n/],
      [
        'page configuration',
        /"code":"customer_form","name":"Customer","type":"form","objectCode":"customers"/,
      ],
      ['page configuration 304', /HTTP\/1\.1 304/],
      ['value set', /"code":"customer_tiers"[^\n]*"values":\[\{"code":"bronze"/],
    ];
    let rest = out;
    for (const [step, pattern] of expectations) {
      const m = pattern.exec(rest);
      expect({ step, found: m !== null, output: m ? '' : rest.slice(0, 600) }).toEqual({
        step,
        found: true,
        output: '',
      });
      rest = rest.slice(m!.index + m![0].length);
    }
    expect(out).not.toMatch(/"code":"(SERVICE_ERROR|TOKEN_INVALID|UNAUTHORIZED)"|undefined/);
  });
});
