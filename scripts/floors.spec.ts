import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(__dirname, '..');
const CONFIG = join(ROOT, '.dependency-cruiser.cjs');
const DEPCRUISE = join(ROOT, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');

/** Runs the floors rule (`npm run lint:floors`) over `src` of `cwd`. */
function cruise(cwd: string): { status: number | null; output: string } {
  const r = spawnSync(process.execPath, [DEPCRUISE, 'src', '--config', CONFIG], { cwd, encoding: 'utf8' });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

/** A tree of `files` (path → source) with a tsconfig, in a temporary folder. */
function fixture(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'floors-'));
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { module: 'commonjs' } }));
  for (const [path, source] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), source);
  }
  return dir;
}

describe('the floors of the house (.dependency-cruiser.cjs)', () => {
  it('should find no import of src that runs from a lower floor up to a higher one', () => {
    const { status, output } = cruise(ROOT);
    expect(output).toContain('no dependency violations found');
    expect(status).toBe(0);
  });

  it('should fail on an import from the records core up to auth, and on a folder loop', () => {
    const dir = fixture({
      'src/records/use-case.ts': "import { signIn } from '../auth/sign-in';\nexport const x = signIn;\n",
      'src/auth/sign-in.ts': 'export const signIn = 1;\n',
      'src/entity/a.ts': "import { b } from '../dataview/b';\nexport const a = b;\n",
      'src/dataview/b.ts': "import { a } from '../entity/a';\nexport const b = 1;\nexport const c = a;\n",
    });
    try {
      const { status, output } = cruise(dir);
      expect(status).not.toBe(0);
      expect(output).toContain('floor-records: src/records/use-case.ts → src/auth/sign-in.ts');
      expect(output).toMatch(/floor-peers: src\/(entity\/a|dataview\/b)\.ts/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('should fail on a folder of src that has no floor', () => {
    const dir = fixture({
      'src/reports/a.ts': "import { c } from '../config/c';\nexport const a = c;\n",
      'src/config/c.ts': 'export const c = 1;\n',
    });
    try {
      const { status, output } = cruise(dir);
      expect(status).not.toBe(0);
      expect(output).toContain('known-folders: src/reports/a.ts');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
