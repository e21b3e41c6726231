#!/usr/bin/env node
'use strict';
/**
 * The production image built without a Docker daemon (issue 34 item 7): the image once failed to
 * build because `npm run build` needs scripts/build-if-stale.js, which the Dockerfile never copied —
 * nothing here builds images, so nobody saw it. This check reads docker/Dockerfile and .dockerignore,
 * lays out the builder stage's /app from exactly the files its COPY lines take (the context filtered
 * as Docker filters it), runs the stage's build commands there, copies what the runtime stage takes
 * `--from=builder` into a second directory, starts its CMD and waits until its HEALTHCHECK passes.
 *
 * Not the image: node_modules is the repository's own, linked (installing is the registry's part,
 * and `npm ci` + compiling the native add-ons takes minutes), so the RUN steps that install, rebuild,
 * prune or delete under node_modules, and the system packages, are skipped and listed; `npm ci`
 * runs as a dry run from npm's cache beside it, on the files the builder has at that point. A host with
 * a daemon builds the real image (`docker build -f docker/Dockerfile .`, see docker/README.md).
 *   node scripts/docker-build-check.js [--dockerfile path]   (test/e2e/docker-image.e2e-spec.ts runs it too)
 */
const { spawn, spawnSync } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const fs = require('node:fs');
const { createServer } = require('node:net');
const { tmpdir } = require('node:os');
const path = require('node:path');

const ROOT = path.join(__dirname, '..');

/**
 * The Dockerfile's instructions: continuation lines joined (comment lines inside them dropped, as
 * Docker does), each as {instruction, flags, args, line}. Parser directives and comments are skipped.
 */
function parseDockerfile(text) {
  const out = [];
  let current = null;
  text.split(/\r?\n/).forEach((raw, index) => {
    const trimmed = raw.trim();
    if (trimmed.startsWith('#') || (current === null && trimmed === '')) return;
    const continued = /\\\s*$/.test(raw);
    const part = continued ? raw.replace(/\\\s*$/, '') : raw;
    current = current === null ? { line: index + 1, text: part.trim() } : { ...current, text: current.text + part };
    if (continued) return;
    const m = /^(\S+)\s*([\s\S]*)$/.exec(current.text);
    let rest = m[2];
    const flags = {};
    for (let f; (f = /^--([\w-]+)=(\S+)\s+/.exec(rest)); rest = rest.slice(f[0].length)) flags[f[1]] = f[2];
    out.push({ instruction: m[1].toUpperCase(), flags, args: rest.trim(), line: current.line });
    current = null;
  });
  return out;
}

/** The stages: FROM starts one, named by `AS name`. */
function stagesOf(instructions) {
  const stages = [];
  for (const i of instructions) {
    if (i.instruction === 'FROM') stages.push({ name: /\sAS\s+(\S+)$/i.exec(i.args)?.[1], steps: [] });
    else if (stages.length > 0) stages[stages.length - 1].steps.push(i);
  }
  return stages;
}

/** A COPY's or CMD's list: the JSON form, or words. */
const listOf = (args) => (args.startsWith('[') ? JSON.parse(args) : args.split(/\s+/));

/** ENV's KEY=value pairs (quoted values unquoted). */
function envOf(args) {
  const env = {};
  for (const m of args.matchAll(/([A-Za-z_][\w]*)=("(?:[^"\\]|\\.)*"|\S*)/g))
    env[m[1]] = m[2].startsWith('"') ? JSON.parse(m[2]) : m[2];
  return env;
}

/** A glob of .dockerignore (Go's filepath.Match plus `**`), anchored at the context's root. */
function globRegExp(pattern) {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '*' && pattern[i + 1] === '*') {
      re += pattern[i + 2] === '/' ? '(?:.*/)?' : '.*';
      i += pattern[i + 2] === '/' ? 2 : 1;
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

/**
 * Whether .dockerignore leaves `relative` (a path in the context) out: the last pattern that matches
 * it or one of its parent folders decides, `!` patterns putting it back (Docker's rules).
 */
function dockerignore(text) {
  const rules = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => {
      const keep = l.startsWith('!');
      const p = path.posix.normalize((keep ? l.slice(1) : l).trim()).replace(/^\/+/, '');
      return { keep, re: globRegExp(p) };
    });
  return (relative) => {
    const parts = relative.split('/');
    let excluded = false;
    for (const rule of rules)
      for (let n = 1; n <= parts.length; n++)
        if (rule.re.test(parts.slice(0, n).join('/'))) {
          excluded = !rule.keep;
          break;
        }
    return excluded;
  };
}

/** Copies `source` (a file or a folder, relative to the context) to `target`, leaving out what is ignored. */
function copyFromContext(context, ignored, source, target) {
  const from = path.join(context, source);
  if (ignored(source) || !fs.existsSync(from))
    throw new Error(`COPY ${source}: not found in the build context (or left out by .dockerignore)`);
  if (!fs.statSync(from).isDirectory()) {
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.copyFileSync(from, target);
    return;
  }
  fs.mkdirSync(target, { recursive: true });
  for (const entry of fs.readdirSync(from)) {
    const child = path.posix.join(source, entry);
    if (!ignored(child)) copyFromContext(context, ignored, child, path.join(target, entry));
  }
}

/** Splits a shell command on its top-level `&&` (quotes respected). */
function andParts(command) {
  const parts = [];
  let quote = null;
  let start = 0;
  for (let i = 0; i < command.length; i++) {
    const c = command[i];
    if (quote) quote = c === quote ? null : quote;
    else if (c === '"' || c === "'") quote = c;
    else if (c === '&' && command[i + 1] === '&') {
      parts.push(command.slice(start, i).trim());
      start = i + 2;
      i++;
    }
  }
  parts.push(command.slice(start).trim());
  return parts.filter((p) => p !== '');
}

/** Why a RUN part is not run here, or null when it runs: only the build and Node's own checks do. */
function skipReason(part) {
  if (/^npm run\s/.test(part) && !/node_modules/.test(part)) return null;
  if (/^node\s/.test(part) && !/node_modules|rm\s|unlink/.test(part)) return null;
  if (/^apt-get\b/.test(part)) return "system packages (the base image's)";
  if (/^npm (ci|install|rebuild|prune|cache)\b/.test(part) || /node_modules/.test(part))
    return "installs or changes node_modules (here the repository's own, linked)";
  return 'not a build step';
}

/** Runs a RUN part with sh in `cwd`; throws with its output when it fails. */
function run(command, cwd, env, line) {
  const result = spawnSync('sh', ['-c', command], {
    cwd,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    encoding: 'utf8',
  });
  if (result.status !== 0)
    throw new Error(`line ${line}: \`${command}\` failed (${result.status}):\n${result.stdout}${result.stderr}`);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

/**
 * Builds and starts the image's layout from `dockerfileText` (docker/Dockerfile by default).
 * Answers {ran, skipped, workDir}; throws with the failing step's output. `keep` leaves workDir.
 */
async function checkImage({ root = ROOT, dockerfileText, keep = false, log = () => undefined } = {}) {
  const text = dockerfileText ?? fs.readFileSync(path.join(root, 'docker', 'Dockerfile'), 'utf8');
  const ignoreFile = path.join(root, '.dockerignore');
  const ignored = dockerignore(fs.existsSync(ignoreFile) ? fs.readFileSync(ignoreFile, 'utf8') : '');
  const stages = stagesOf(parseDockerfile(text));
  const builder = stages.find((s) => s.name === 'builder') ?? stages[0];
  const runtime = stages[stages.length - 1];
  const workDir = fs.mkdtempSync(path.join(tmpdir(), 'mtb-image-'));
  const ran = [];
  const skipped = [];
  let service;
  try {
    const app = path.join(workDir, 'builder');
    fs.mkdirSync(app);
    fs.symlinkSync(path.join(root, 'node_modules'), path.join(app, 'node_modules'), 'dir');
    let workdir = '/';
    const env = {};
    for (const step of builder.steps) {
      if (step.instruction === 'WORKDIR') workdir = path.posix.resolve(workdir, step.args);
      else if (step.instruction === 'ENV') Object.assign(env, envOf(step.args));
      else if (step.instruction === 'COPY') {
        if (step.flags.from) throw new Error(`line ${step.line}: the builder copies from another stage`);
        const words = listOf(step.args);
        const destWord = words.pop();
        const dest = path.posix.resolve(workdir, destWord);
        const into = path.join(app, path.posix.relative(workdir, dest));
        // Docker: a destination ending in / (or several sources) is a folder the sources go into.
        const intoFolder = words.length > 1 || destWord.endsWith('/') || destWord === '.';
        for (const source of words) {
          const target = intoFolder ? path.join(into, path.posix.basename(source)) : into;
          copyFromContext(root, ignored, path.posix.normalize(source).replace(/^\/+/, ''), target);
        }
        log(`COPY ${step.args}`);
      } else if (step.instruction === 'RUN')
        for (const part of andParts(step.args)) {
          if (/^npm ci\b/.test(part)) {
            // The install as a dry run from npm's cache, in a folder of its own holding what the
            // builder has so far (no node_modules): a lock missing or out of step with package.json fails.
            const install = path.join(workDir, 'install');
            fs.cpSync(app, install, { recursive: true, filter: (f) => path.basename(f) !== 'node_modules' });
            run(`${part} --dry-run --offline --no-audit --no-fund`, install, env, step.line);
            ran.push({ line: step.line, command: `${part} (dry run)` });
          }
          const reason = skipReason(part);
          if (reason !== null) {
            skipped.push({ line: step.line, command: part, reason });
            continue;
          }
          log(`RUN ${part}`);
          run(part, app, env, step.line);
          ran.push({ line: step.line, command: part });
        }
    }
    // The runtime stage: what it copies from the builder, then its CMD until its HEALTHCHECK passes.
    const image = path.join(workDir, 'runtime');
    fs.mkdirSync(image);
    const runtimeEnv = {};
    let cmd;
    let healthcheck;
    for (const step of runtime.steps) {
      if (step.instruction === 'ENV') Object.assign(runtimeEnv, envOf(step.args));
      else if (step.instruction === 'CMD') cmd = listOf(step.args);
      else if (step.instruction === 'HEALTHCHECK') healthcheck = JSON.parse(/CMD\s+(\[.*\])$/s.exec(step.args)[1]);
      else if (step.instruction === 'COPY' && step.flags.from === builder.name) {
        const [source, dest] = listOf(step.args);
        const from = path.join(app, path.posix.relative(workdir, source));
        if (!fs.existsSync(from)) throw new Error(`line ${step.line}: the builder has no ${source}`);
        const to = path.join(image, path.posix.normalize(dest));
        if (path.basename(from) === 'node_modules') fs.symlinkSync(fs.realpathSync(from), to, 'dir');
        else fs.cpSync(from, to, { recursive: true });
      }
    }
    if (!cmd || !healthcheck) throw new Error('the runtime stage needs a CMD and a HEALTHCHECK in the JSON form');
    const port = String(await freePort());
    const serviceEnv = {
      PATH: process.env.PATH,
      ...runtimeEnv,
      API_HOST: '127.0.0.1', // this machine only, whatever the image listens on
      API_PORT: port,
      DB_NAME: path.join(workDir, 'service.sqlite'),
      EXPORT_DIR: path.join(workDir, 'exports'),
      JWT_SECRET: randomBytes(48).toString('base64'),
      TENANT_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
      SEED_DEMO: 'false',
      LOG_LEVEL: 'error',
    };
    let output = '';
    service = spawn(cmd[0] === 'node' ? process.execPath : cmd[0], cmd.slice(1), { cwd: image, env: serviceEnv });
    service.stdout.on('data', (d) => (output += d));
    service.stderr.on('data', (d) => (output += d));
    log(`CMD ${cmd.join(' ')} (port ${port}); HEALTHCHECK until it passes`);
    for (let i = 0; ; i++) {
      if (service.exitCode !== null) throw new Error(`the CMD exited with ${service.exitCode}:\n${output}`);
      const probe = spawnSync(healthcheck[0] === 'node' ? process.execPath : healthcheck[0], healthcheck.slice(1), {
        env: serviceEnv,
      });
      if (probe.status === 0) break;
      if (i >= 120) throw new Error(`the HEALTHCHECK did not pass in 60 s:\n${output}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    ran.push({ command: `CMD ${cmd.join(' ')}; HEALTHCHECK passed` });
    return { ran, skipped, workDir };
  } finally {
    if (service && service.exitCode === null) {
      service.kill('SIGTERM');
      await new Promise((r) => service.once('exit', r));
    }
    if (!keep) fs.rmSync(workDir, { recursive: true, force: true });
  }
}

module.exports = { checkImage, dockerignore, parseDockerfile, stagesOf, andParts };

if (require.main === module) {
  // --dockerfile <path>: another Dockerfile than docker/Dockerfile (the context stays the repository).
  const at = process.argv.indexOf('--dockerfile');
  const dockerfileText = at > 0 ? fs.readFileSync(process.argv[at + 1], 'utf8') : undefined;
  checkImage({ dockerfileText, log: (line) => process.stdout.write(`${line}\n`) }).then(
    ({ skipped }) => {
      for (const s of skipped) process.stdout.write(`skipped (line ${s.line}): ${s.command.slice(0, 80)} — ${s.reason}\n`);
      process.stdout.write('docker build check: the image layout built and passed its HEALTHCHECK\n');
    },
    (err) => {
      process.stderr.write(`docker build check failed: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
