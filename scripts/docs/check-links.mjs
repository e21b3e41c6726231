#!/usr/bin/env node
// Checks every relative link and #anchor of the repository's Markdown offline, as GitHub resolves
// them in a fresh clone: the file must exist, and an anchor must be a heading's GitHub slug or an
// explicit `<a id="…">` / `<a name="…">` (the D-number anchors of docs/decisions.md).
// remark-validate-links does the checking; unified-engine runs it over the whole set at once, which
// is what lets it check anchors in other files. External URLs are not fetched.
//
//   node scripts/docs/check-links.mjs                    the repository's Markdown (npm run lint:docs)
//   node scripts/docs/check-links.mjs --root DIR FILE…   other files (the unit test's fixtures)
// Exit status 1 and one line per broken link when anything does not resolve.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { remark } from 'remark';
import remarkValidateLinks from 'remark-validate-links';
import { engine } from 'unified-engine';

/** The Markdown that ships in the repository. */
export const DOC_FILES = ['README.md', 'SECURITY.md', 'client/README.md', 'docker/README.md', 'docs'];

const ANCHOR = /<a\s+(?:[^>]*\s)?(?:id|name)\s*=\s*["']([^"']+)["']/gi;

/**
 * Gives remark-validate-links the explicit HTML anchors: it reads an element's id from
 * `data.hProperties`, which raw HTML never gets from the Markdown parser.
 */
function htmlAnchors() {
  return (tree) => {
    const extra = [];
    const visit = (node) => {
      if (node.type === 'html') {
        for (const [, id] of node.value.matchAll(ANCHOR)) {
          extra.push({ type: 'html', value: '', data: { hProperties: { id } } });
        }
      }
      for (const child of node.children ?? []) visit(child);
    };
    visit(tree);
    tree.children.push(...extra);
  };
}

const { values, positionals } = parseArgs({ options: { root: { type: 'string' } }, allowPositionals: true });
const root = path.resolve(values.root ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..'));

engine(
  {
    processor: remark(),
    cwd: root,
    files: positionals.length > 0 ? positionals : DOC_FILES,
    extensions: ['md'],
    plugins: [[htmlAnchors], [remarkValidateLinks, { repository: false, root }]],
    output: false,
    out: false,
    quiet: true,
    frail: true,
    color: false,
    ignoreName: '.docslinksignore',
  },
  (error, code) => {
    if (error) {
      process.stderr.write(`${error.stack ?? error}\n`);
      process.exitCode = 1;
      return;
    }
    process.exitCode = code;
  },
);
