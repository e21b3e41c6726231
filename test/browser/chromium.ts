import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** Names of a Chromium executable, looked up on PATH in this order. */
const NAMES = ['chromium', 'chromium-browser', 'google-chrome-stable', 'google-chrome'];

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/**
 * The Chromium the browser tests drive (no browser is downloaded): CHROMIUM_PATH when set —
 * then only that one —, else the first of `chromium`, `chromium-browser`, `google-chrome-stable`,
 * `google-chrome` on PATH. `tried` says where it looked.
 */
export function findChromium(env: NodeJS.ProcessEnv = process.env): { path?: string; tried: string[] } {
  const explicit = env.CHROMIUM_PATH?.trim();
  if (explicit) return { path: isExecutable(explicit) ? explicit : undefined, tried: [explicit] };
  const dirs = (env.PATH ?? '').split(delimiter).filter(Boolean);
  const tried = NAMES.map((name) => `${name} on PATH`);
  for (const name of NAMES) {
    for (const dir of dirs) {
      const path = join(dir, name);
      if (isExecutable(path)) return { path, tried };
    }
  }
  return { tried };
}

/** Why the browser tier cannot run, as a command-line user needs to read it. */
export function chromiumMissingMessage(tried: string[]): string {
  return [
    'npm run test:browser needs Chromium (Swagger UI and the reference page run in a real browser).',
    `Not found: ${tried.join(', ')}.`,
    'Install it (Debian/Ubuntu: apt-get install chromium) or point CHROMIUM_PATH at a Chromium or Chrome executable.',
    'The other tiers do not need it: npm test runs unit, integration and e2e tests.',
  ].join('\n');
}
