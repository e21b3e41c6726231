import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';

const ROOT = join(__dirname, '..', '..');
/** The pages whose TypeScript examples use the client: each compiled as one program. */
const PAGES = ['client/README.md', 'docs/integrators.md'];

/**
 * What the page leaves to the application (its own functions and values), declared so that the
 * examples compile as an integrator's code would.
 */
const PAGE_OWN = `
declare const password: string;
declare const fileInput: HTMLInputElement;
declare function showLogin(reason?: 'unauthorized' | 'signed-out'): void;
declare function showErrors(errors: Array<{ row: number; field: string | null; error: string }>, file?: string): void;
declare function showTotal(total: number): void;
declare function showMore(cursor: string | null): void;
declare function reloadPage(): void;
declare function applyChange(event: 'created' | 'updated' | 'deleted', change: { id: number; row: object | null }): void;
`;

/**
 * A page's TypeScript blocks, in order, as one program: its imports on top, the rest in an async
 * function (the blocks use top-level await), `@mtb/client` mapped to this package's source.
 */
function pageProgram(page: string): string {
  const text = readFileSync(join(ROOT, page), 'utf8');
  const blocks = [...text.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
  expect({ page, blocks: blocks.length > 0 }).toEqual({ page, blocks: true });
  const lines = blocks.join('\n').split('\n');
  const imports = lines.filter((l) => l.startsWith('import ')).map((l) => l.replace(/ \/\/.*$/, ''));
  const body = lines.filter((l) => !l.startsWith('import '));
  return [...imports, PAGE_OWN, 'export async function readme(): Promise<void> {', ...body, '}'].join('\n');
}

describe("the client's examples in client/README.md and docs/integrators.md", () => {
  it.each(PAGES)('%s has TypeScript examples that compile against the client with tsc --strict', (page) => {
    const dir = mkdtempSync(join(tmpdir(), 'mtb-client-readme-'));
    try {
      const file = join(dir, 'readme.ts');
      writeFileSync(file, pageProgram(page));
      const program = ts.createProgram([file], {
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        target: ts.ScriptTarget.ES2022,
        module: ts.ModuleKind.NodeNext,
        moduleResolution: ts.ModuleResolutionKind.NodeNext,
        lib: ['lib.es2022.d.ts', 'lib.dom.d.ts', 'lib.dom.asynciterable.d.ts'],
        types: [],
        paths: { '@mtb/client': [join(__dirname, 'index.ts')] },
      });
      const problems = ts
        .getPreEmitDiagnostics(program)
        .map(
          (d) =>
            `${d.file?.fileName === file ? page : (d.file?.fileName ?? '')}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`,
        );
      expect(problems).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
