import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { VARS } from '../../src/config/variables';

const ROOT = join(__dirname, '..', '..');
const CHECKER = join(__dirname, 'check-links.mjs');

/** Runs the link checker the way `npm run lint:docs` does, optionally on other files. */
function checkLinks(args: string[] = []): { status: number | null; output: string } {
  const res = spawnSync(process.execPath, [CHECKER, ...args], { cwd: ROOT, encoding: 'utf8' });
  return { status: res.status, output: `${res.stdout}${res.stderr}` };
}

/** Every file of the working tree (tracked or new, not ignored) whose path matches. */
function repoFiles(pattern: RegExp): string[] {
  return execFileSync('git', ['ls-files', '-co', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' })
    .split('\n')
    .filter((f) => f !== '' && pattern.test(f) && existsSync(join(ROOT, f)));
}

const read = (file: string): string => readFileSync(join(ROOT, file), 'utf8');

/** Explicit `<a id="…">` anchors of a page. */
const anchorsOf = (file: string): string[] => [...read(file).matchAll(/<a id="([^"]+)"><\/a>/g)].map((m) => m[1]);

/** The Markdown shipped with the repository (what the link checker reads). */
const MARKDOWN = /^(README\.md|SECURITY\.md|client\/README\.md|docker\/README\.md|docs\/.+\.md)$/;
/** Source, tests, scripts and docs: where D-numbers and spec sections are cited. */
const CITING = /^(src|test|client\/src|web|scripts|docs)\/.+\.(ts|js|mjs|md)$|^[^/]+\.md$/;

describe('Repository documentation', () => {
  describe('links', () => {
    it('should resolve every relative link and anchor of the Markdown', () => {
      const { status, output } = checkLinks();
      expect({ status, output }).toEqual({ status: 0, output: '' });
    });

    describe('the checker', () => {
      let dir: string;

      beforeEach(() => {
        dir = mkdtempSync(join(tmpdir(), 'docs-links-'));
        writeFileSync(
          join(dir, 'target.md'),
          '# Target\n\n## A section (D12)\n\n<a id="d12"></a>\n### D12 Passwords\n\ntext\n',
        );
      });

      afterEach(() => rmSync(dir, { recursive: true, force: true }));

      it('should accept heading slugs, explicit anchors and existing files', () => {
        writeFileSync(
          join(dir, 'page.md'),
          '# Page\n\n## Here\n\n[a](#here) [b](target.md#a-section-d12) [c](target.md#d12) ' +
            '[d](target.md#d12-passwords) [e](target.md) [f](https://example.com/missing)\n',
        );
        expect(checkLinks(['--root', dir, 'page.md', 'target.md'])).toEqual({ status: 0, output: '' });
      });

      it('should fail on a missing file, a missing anchor in another page and one in its own page', () => {
        writeFileSync(
          join(dir, 'page.md'),
          '# Page\n\n[a](missing.md) [b](target.md#d13) [c](#nowhere) [d](target.md#d12)\n',
        );
        const { status, output } = checkLinks(['--root', dir, 'page.md', 'target.md']);
        expect(status).toBe(1);
        expect(output).toContain('Cannot find file `missing.md`');
        expect(output).toContain('Cannot find heading for `#d13` in `target.md`');
        expect(output).toContain('Cannot find heading for `#nowhere`');
        expect(output).toContain('3 warnings');
      });
    });
  });

  describe('citations', () => {
    const citing = repoFiles(CITING);

    it('should have an anchor for each of D1 to D58, in order, in docs/decisions.md', () => {
      expect(anchorsOf('docs/decisions.md')).toEqual(Array.from({ length: 58 }, (_, i) => `d${i + 1}`));
    });

    it('should resolve every D-number cited in the code and the docs', () => {
      const anchors = new Set(anchorsOf('docs/decisions.md'));
      const unresolved = citing.flatMap((file) =>
        [...read(file).matchAll(/\bD(\d{1,3})\b/g)]
          .filter((m) => !anchors.has(`d${m[1]}`))
          .map((m) => `${file}: D${m[1]}`),
      );
      expect(unresolved).toEqual([]);
    });

    it('should resolve every spec section cited in the code and the docs', () => {
      const anchors = new Set(anchorsOf('docs/spec.md'));
      const unresolved = citing.flatMap((file) =>
        [...read(file).matchAll(/§ ?(\d+(?:\.\d+)*)|\bspec (\d+(?:\.\d+)+)/g)]
          .map((m) => `spec-${(m[1] ?? m[2]).replaceAll('.', '-')}`)
          .filter((anchor) => !anchors.has(anchor))
          .map((anchor) => `${file}: ${anchor}`),
      );
      expect(unresolved).toEqual([]);
    });
  });

  it('should list every configuration variable in docs/configuration.md', () => {
    const page = read('docs/configuration.md');
    expect(Object.keys(VARS).filter((name) => !page.includes(`| \`${name}\` |`))).toEqual([]);
  });

  it('should quote only repository paths that exist', () => {
    const generated = /^(dist|client\/dist|test\/artifacts|data)(\/|$)/;
    const missing = repoFiles(MARKDOWN).flatMap((file) =>
      [...read(file).matchAll(/`((?:\.\.\/)*(?:src|test|scripts|client|web|docker|bench|docs|\.ci)\/[^`\s]*)`/g)]
        .map((m) => m[1])
        .filter((path) => !/[*<>{}…]/.test(path) && !generated.test(path))
        .filter((path) => !existsSync(join(ROOT, path)) && !existsSync(join(ROOT, dirname(file), path)))
        .map((path) => `${file}: ${path}`),
    );
    expect(missing).toEqual([]);
  });

  it('should point nowhere outside the repository', () => {
    const outside = ['..', 'shared'].join('/');
    const res = spawnSync('git', ['grep', '--untracked', '-n', '-F', '-e', outside, '-e', `/work/${'shared'}`], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect({ status: res.status, found: res.stdout }).toEqual({ status: 1, found: '' });
  });
});
