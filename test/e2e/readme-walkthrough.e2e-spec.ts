import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { blocksOf, npmScriptsAsNode, unaccountedBlocks } from '../support/docs-walkthrough';
import { buildService } from '../support/service-cluster';
import { waitFor } from '../support/test-app';

const ROOT = join(__dirname, '..', '..');

/**
 * The README's curl walk-through, pasted into a shell as a new user would, followed by the examples
 * of the docs pages that build on its variables: every ```sh block marked `<!-- walkthrough -->`
 * (test/support/docs-walkthrough.ts), page by page in this order, run by one bash against the
 * built service on the embedded default in a fresh directory. Only the port and the way the CLIs
 * are started differ (a test cannot take port 8008 or rely on npm's output), and `node -e` finds
 * the repository's packages through NODE_PATH, as it would in the checkout.
 *
 * Each page's output must show what the page says, in order. Every other shell block of the pages
 * carries `<!-- not-run: <why> -->`, so that no example goes untried by accident.
 */
const PAGES: Array<[string, Array<[string, RegExp]>]> = [
  [
    'README.md',
    [
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
    ],
  ],
  [
    'docs/entities-and-profiles.md',
    [
      ['list sorted DESC', /"records":\[/],
      ['order by id', /"data":\{"id":3,"customer_id":3/],
      ['/records page', /"count":10,"total":1[01]\d/],
      ['If-Match save', /"credit_limit":7500/],
      ['mass assignment', /"field":"cus_tenant_id","error":"is set by the service and cannot be written"/],
      ['id out of range', /"code":"NOT_FOUND"/],
      ['filter out of range', /"field":"filters\[customer_id\]"/],
    ],
  ],
  [
    'docs/dataviews-and-exports.md',
    [
      ['dataview config', /"dvc_code":"customers_grid"/],
      ['dataview config 304', /HTTP\/1\.1 304/],
      ['dataview page', /"pagination":\{"page":0,"pageSize":3,"total":\d+\}/],
      ['dataview filter refused', /"field":"filters\[0\]\.operator"/],
      ['dataview groups', /"key":"bronze","count":\d+/],
      ['dataview next cursor page', /"pagination":\{"pageSize":5,"nextCursor":"[^"]+"\}/],
      ['dataview bad cursor', /"field":"cursor","error":"invalid"/],
      ['export downloaded as CSV', /\n[^\n{]*,[^\n{]*\n[^\n{]*gold/],
    ],
  ],
  [
    'docs/workflows.md',
    [
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
    ],
  ],
  [
    'docs/integrators.md',
    [
      [
        'page configuration',
        /"code":"customer_form","name":"Customer","type":"form","objectCode":"customers"/,
      ],
      ['page configuration 304', /HTTP\/1\.1 304/],
      ['value set', /"code":"customer_tiers"[^\n]*"values":\[\{"code":"bronze"/],
    ],
  ],
  [
    'docs/tenancy-and-auth.md',
    [
      ['a header per line', /^\{"ciphertext":[^\n]+\n\{"ciphertext":[^\n]+\n\{"ciphertext":[^\n]+\n/m],
      ['tenant-config with a printed header', /"tenant_name":"Acme Corporation"/],
    ],
  ],
  ['docs/external-connections.md', [['encrypted URL', /^enc:v2:[0-9a-f]{8}:\S+\n/m]]],
  [
    'docs/worked-example.md',
    [
      [
        'acme contacts, notes hidden, phone masked',
        /"records":\[\{"id":1,"full_name":"Ada Lovelace","phone":"\*+0001","lastModified":"2025-01-15T09:30:00.000Z"\},\{"id":2,"full_name":"Alan Turing"/,
      ],
      ['one contact', /"data":\{"id":1,"full_name":"Ada Lovelace"/],
      ['filtered', /"records":\[\{"id":2,"full_name":"Alan Turing"[^\]]*\]/],
      ['hidden field not filterable', /"code":"VALIDATION_ERROR"[^\n]*"field":"filters\[notes\]"/],
      ['globex sees its own', /"records":\[\{"id":3,"full_name":"Edsger Dijkstra"[^\]]*\],"total":1/],
    ],
  ],
  [
    'docs/bulk-and-inline-editing.md',
    [
      [
        'bulk update',
        /"results":\[\{"index":0,"id":1,"status":200,[^\]]*\{"index":1,"id":2,"status":200,[^\]]*\],"succeeded":2,"failed":0/,
      ],
      [
        'stale row',
        /"results":\[\{"index":0,"id":1,"status":409,"error":\{"code":"CONFLICT"[^\n]*"succeeded":0,"failed":1/,
      ],
      ['dataview action', /"results":\[\{"index":0,"id":7,"status":200,[^\n]*"succeeded":2,"failed":0/],
      ['confirmation required', /"code":"VALIDATION_ERROR"[^\n]*"confirm":"required"/],
      ['inline edit', /"data":\{"id":42,[^\n]*"status":"paid"/],
      ['column not editable', /"field":"amount","error":"is not editable in this grid"/],
    ],
  ],
  [
    'docs/live-changes.md',
    [
      ['stream opened', /^: open$/m],
      [
        'created event',
        /^id: \d+\nevent: created\ndata: \{"id":\d+,"lastModified":"[^"]+","row":\{"id":\d+,"name":"Live Example"/m,
      ],
      ['stream opened with a ticket', /^: open$/m],
    ],
  ],
  [
    'docs/tenant-lifecycle.md',
    [
      ['tenant created', /"data":\{"tenantId":"\d+","code":"umbrella","copied":\{/],
      ['usage', /"data":\{"tenantId":"1","code":"acme","requests":\{/],
      ['erased', /"tenantId":"\d+","code":"umbrella"/],
      ['export completed', /"tenantId":"2","status":"COMPLETED"[^\n]*"filename":"tenant-globex-[^"]+\.zip"/],
    ],
  ],
];
const PAGE_MARK = '@@@ page ';

/** The pages' marked blocks as one bash script, each page's output after a line naming it. */
function walkthroughScript(port: number): string {
  const parts = PAGES.map(([page]) => {
    const run = blocksOf(ROOT, page).filter((b) => b.marker === 'run');
    expect({ page, blocks: run.length > 0 }).toEqual({ page, blocks: true });
    return [`echo; echo '${PAGE_MARK}${page}'`, ...run.map((b) => b.code)].join('\n');
  });
  const script = ['set -u', 'exec 2>&1', ...parts, `echo; echo '${PAGE_MARK}end'`].join('\n');
  return npmScriptsAsNode(ROOT, script).replaceAll('http://localhost:8008', `http://127.0.0.1:${port}`);
}

/** Every Markdown page with shell examples: the README, docs/ and the client's README. */
function allPages(): string[] {
  return ['README.md', 'client/README.md', ...readdirSync(join(ROOT, 'docs')).map((f) => `docs/${f}`)].filter(
    (p) => p.endsWith('.md'),
  );
}

describe("The README's curl walk-through and the docs' examples", () => {
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
    }, 60000);
  }, 240000); // the build, migrations and the demo seed of a fresh database, on a shared machine

  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    if (cwd) rmSync(cwd, { recursive: true, force: true });
  });

  it('should either run or explicitly excuse every shell block of every page', () => {
    expect(allPages().flatMap((page) => unaccountedBlocks(blocksOf(ROOT, page)))).toEqual([]);
  });

  it('should refuse a new unmarked shell block, a reason-less excuse and a marked block that is not sh', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mtb-doc-blocks-'));
    try {
      writeFileSync(
        join(dir, 'page.md'),
        [
          '# Page',
          '```bash',
          'curl -s "$API/api/v1/customers"',
          '```',
          '```',
          'npm run proxy',
          '```',
          '<!-- not-run:  -->',
          '```sh',
          'docker compose up',
          '```',
          '<!-- walkthrough -->',
          '```json',
          '{}',
          '```',
          '<!-- not-run: needs Docker -->',
          '```sh',
          'docker compose up',
          '```',
          '```',
          'docker/   the image',
          '```',
          '',
        ].join('\n'),
      );
      expect(unaccountedBlocks(blocksOf(dir, 'page.md'))).toEqual([
        'page.md:2: a shell block needs <!-- walkthrough --> or <!-- not-run: <why> -->',
        'page.md:5: a shell block needs <!-- walkthrough --> or <!-- not-run: <why> -->',
        'page.md:9: a shell block needs <!-- walkthrough --> or <!-- not-run: <why> -->',
        'page.md:13: a marked block must be ```sh (is "json")',
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('should run the marked blocks of every page that has them, in a known order', () => {
    const marked = allPages().filter((page) => blocksOf(ROOT, page).some((b) => b.marker === 'run'));
    expect(marked.filter((page) => !PAGES.some(([known]) => known === page))).toEqual([]);
  });

  it('should run pasted in order, each step answering as the README and the docs say', () => {
    const out = execFileSync('bash', ['-c', walkthroughScript(port)], {
      cwd,
      encoding: 'utf8',
      timeout: 120000,
      env: { ...process.env, NODE_PATH: join(ROOT, 'node_modules') },
    });
    const sections = out.split(PAGE_MARK);
    for (const [page, expectations] of PAGES) {
      const section = sections.find((s) => s.startsWith(`${page}\n`));
      expect({ page, ran: section !== undefined }).toEqual({ page, ran: true });
      let rest = section!;
      for (const [step, pattern] of expectations) {
        const m = pattern.exec(rest);
        expect({ page, step, found: m !== null, output: m ? '' : rest.slice(0, 800) }).toEqual({
          page,
          step,
          found: true,
          output: '',
        });
        rest = rest.slice(m!.index + m![0].length);
      }
    }
    expect(sections.at(-1)).toBe('end\n');
    expect(out).not.toMatch(
      /"code":"(SERVICE_ERROR|TOKEN_INVALID|UNAUTHORIZED)"|undefined|command not found|No such file|Error: /,
    );
  });
});
