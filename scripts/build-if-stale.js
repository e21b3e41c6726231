#!/usr/bin/env node
/**
 * Builds dist/ with tsc only when a source changed since the last build, so the CLI scripts
 * (`npm run tenant-header`, `seed:demo`, `proxy`, …) answer in well under a second when the build
 * is current. Stale means: no dist/.build-stamp, or a file under src/ (or a tsconfig, or
 * package-lock.json) newer than it, or a source file removed since (the count differs).
 */
'use strict';
const { execFileSync } = require('node:child_process');
const { readdirSync, statSync, writeFileSync, readFileSync, existsSync, rmdirSync, unlinkSync } = require('node:fs');
const { join, relative } = require('node:path');

const root = join(__dirname, '..');
const stamp = join(root, 'dist', '.build-stamp');

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

if (process.argv.includes('--force') || stale()) {
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
