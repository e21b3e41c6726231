#!/usr/bin/env node
/**
 * Builds dist/ with tsc only when a source changed since the last build, so the CLI scripts
 * (`npm run tenant-header`, `seed:demo`, `proxy`, …) answer in well under a second when the build
 * is current. Stale means: no dist/.build-stamp, or a file under src/ (or a tsconfig, or
 * package-lock.json) newer than it, or a source file removed since (the count differs).
 *
 * It also bundles the reference page (web/ and the typed client it imports, client/src/) with
 * esbuild into dist/web/, under the same rule with a stamp of its own (dist/web/.build-stamp);
 * this takes well under a second. Without esbuild (a production install without devDependencies)
 * the page is skipped: production does not serve it. `--web-only` builds just the page.
 */
'use strict';
const { execFileSync } = require('node:child_process');
const {
  readdirSync,
  statSync,
  writeFileSync,
  readFileSync,
  existsSync,
  rmdirSync,
  unlinkSync,
  mkdirSync,
  copyFileSync,
} = require('node:fs');
const { join, relative } = require('node:path');

const root = join(__dirname, '..');
const stamp = join(root, 'dist', '.build-stamp');
const webOut = join(root, 'dist', 'web');
const webStamp = join(webOut, '.build-stamp');

function newest(dir, acc = { mtime: 0, count: 0 }) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest(path, acc);
    else if (entry.name.endsWith('.ts')) {
      acc.mtime = Math.max(acc.mtime, statSync(path).mtimeMs);
      acc.count++;
    }
  }
  return acc;
}

/**
 * Deletes compiled files whose source is gone (a moved or split module): a stale `schema.js` would
 * otherwise shadow a new `schema/index.js`, since Node resolves the file before the folder.
 */
function removeOrphans(dir) {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (path === webOut) continue; // the bundled page (buildWeb), not tsc's output
      removeOrphans(path);
      if (readdirSync(path).length === 0) rmdirSync(path);
      continue;
    }
    const m = /^(.*)\.js(\.map)?$/.exec(entry.name);
    if (!m) continue;
    const source = join(root, 'src', relative(join(root, 'dist'), dir), `${m[1]}.ts`);
    if (!existsSync(source)) unlinkSync(path);
  }
}

function stale() {
  if (!existsSync(stamp)) return true;
  const sources = newest(join(root, 'src'));
  for (const f of ['tsconfig.json', 'tsconfig.build.json', 'package-lock.json']) {
    const p = join(root, f);
    if (existsSync(p)) sources.mtime = Math.max(sources.mtime, statSync(p).mtimeMs);
  }
  const built = statSync(stamp).mtimeMs;
  return sources.mtime > built || readFileSync(stamp, 'utf8').trim() !== String(sources.count);
}

function newestWeb() {
  const acc = { mtime: 0, count: 0 };
  const walk = (dir) => {
    if (!existsSync(dir)) return;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules' && entry.name !== 'dist') walk(path);
      } else if (/\.(ts|html|css|json)$/.test(entry.name)) {
        acc.mtime = Math.max(acc.mtime, statSync(path).mtimeMs);
        acc.count++;
      }
    }
  };
  walk(join(root, 'web'));
  walk(join(root, 'client', 'src'));
  return acc;
}

function webStale() {
  if (!existsSync(webStamp)) return true;
  const sources = newestWeb();
  return sources.mtime > statSync(webStamp).mtimeMs || readFileSync(webStamp, 'utf8').trim() !== String(sources.count);
}

/** Bundles web/main.ts (with client/src) into dist/web/app.js and copies index.html and app.css. */
function buildWeb() {
  if (!existsSync(join(root, 'web', 'main.ts'))) return; // an image built from src/ only (docker/)
  let esbuild;
  try {
    esbuild = require('esbuild');
  } catch {
    if (!process.argv.includes('--quiet'))
      process.stderr.write('build: esbuild is not installed (production install); reference page skipped\n');
    return;
  }
  const started = Date.now();
  mkdirSync(webOut, { recursive: true });
  try {
    esbuild.buildSync({
      entryPoints: [join(root, 'web', 'main.ts')],
      outfile: join(webOut, 'app.js'),
      bundle: true,
      format: 'iife',
      platform: 'browser',
      target: ['es2022'],
      sourcemap: 'linked',
      minify: false,
      legalComments: 'none',
      logLevel: 'error',
    });
  } catch {
    // The service still starts (the page answers 404 until it builds); --web-only fails.
    process.stderr.write('build: the reference page (web/) did not build; see the errors above\n');
    if (process.argv.includes('--web-only')) process.exit(1);
    return;
  }
  for (const file of ['index.html', 'app.css']) copyFileSync(join(root, 'web', file), join(webOut, file));
  writeFileSync(webStamp, `${newestWeb().count}\n`);
  if (!process.argv.includes('--quiet'))
    process.stderr.write(`build: reference page bundled in ${Date.now() - started} ms\n`);
}

const force = process.argv.includes('--force');
if (!process.argv.includes('--web-only') && (force || stale())) {
  const tsc = require.resolve('typescript/bin/tsc');
  const started = Date.now();
  try {
    execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], {
      cwd: root,
      stdio: 'inherit',
    });
  } catch {
    process.exit(1);
  }
  removeOrphans(join(root, 'dist'));
  writeFileSync(stamp, `${newest(join(root, 'src')).count}\n`);
  if (!process.argv.includes('--quiet'))
    process.stderr.write(`build: compiled in ${Date.now() - started} ms\n`);
}
if (force || webStale()) buildWeb();
