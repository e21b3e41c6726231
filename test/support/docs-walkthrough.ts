import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The shell examples of the Markdown pages, as the docs test (test/e2e/readme-walkthrough.e2e-spec.ts)
 * reads them. A shell block is preceded by one of two markers, on the line right above its fence:
 *
 *   <!-- walkthrough -->              the test runs it, in page order, after the README's
 *   <!-- not-run: <why> -->           it cannot run in a test (Docker, SQL Server, a second
 *                                     terminal, …): the reason is required and says which
 *
 * A shell block without either fails the test, so a new example is either run or excused.
 */
export const RUN_MARKER = '<!-- walkthrough -->';
const NOT_RUN_MARKER = /^<!-- not-run: (\S[^]*?) -->$/;

/** Fence languages that are shell. */
const SHELL_LANGUAGES = new Set(['sh', 'bash', 'shell', 'zsh', 'console']);
/** A line of an unlabelled block that is a command a reader would paste into a shell. */
const COMMAND_LINE = /^\s*(\$ )?((curl|npm|npx|node|docker|sqlite3|psql|export|openssl)\s|[A-Z_]+=\S)/;

export interface DocBlock {
  page: string;
  /** 1-based line of the opening fence. */
  line: number;
  language: string;
  code: string;
  /** `run`, `not-run` (with `reason`), or undefined: no marker. */
  marker?: 'run' | 'not-run';
  reason?: string;
}

/** Every fenced block of a page, with the marker on the line above it. */
export function blocksOf(root: string, page: string): DocBlock[] {
  const lines = readFileSync(join(root, page), 'utf8').split('\n');
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)/.exec(lines[i]);
    if (!open) continue;
    const [, indent, fence, language] = open;
    const body: string[] = [];
    let j = i + 1;
    while (j < lines.length && !lines[j].startsWith(`${indent}${fence}`))
      body.push(lines[j++].slice(indent.length));
    const above = (lines[i - 1] ?? '').trim();
    const notRun = NOT_RUN_MARKER.exec(above);
    blocks.push({
      page,
      line: i + 1,
      language: language.toLowerCase(),
      code: body.join('\n'),
      marker: above === RUN_MARKER ? 'run' : notRun ? 'not-run' : undefined,
      reason: notRun?.[1],
    });
    i = j;
  }
  return blocks;
}

/** A block a reader would paste into a shell: labelled as shell, or unlabelled with a command in it. */
export function isShell(block: DocBlock): boolean {
  if (SHELL_LANGUAGES.has(block.language)) return true;
  return block.language === '' && block.code.split('\n').some((l) => COMMAND_LINE.test(l));
}

/**
 * What a block must change to: a marked block must be shell (```sh), and a shell block must be
 * marked. One line per offending block, naming the page and the line.
 */
export function unaccountedBlocks(blocks: DocBlock[]): string[] {
  return blocks.flatMap((b) => {
    const where = `${b.page}:${b.line}`;
    if (b.marker && b.language !== 'sh')
      return [`${where}: a marked block must be \`\`\`sh (is "${b.language}")`];
    if (!b.marker && isShell(b))
      return [`${where}: a shell block needs ${RUN_MARKER} or <!-- not-run: <why> -->`];
    return [];
  });
}

/**
 * `npm run -s <script> --` as the script's own command without its build step (the test builds
 * once, and npm's output or the checkout's path cannot be relied on in a temporary directory).
 */
export function npmScriptsAsNode(root: string, script: string): string {
  const { scripts } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };
  return script.replace(/npm run -s ([\w:-]+) --/g, (whole, name: string) => {
    const command = /(?:^|&& )node (dist\/\S+\.js)$/.exec(scripts[name] ?? '');
    return command ? `node ${join(root, command[1])}` : whole;
  });
}
