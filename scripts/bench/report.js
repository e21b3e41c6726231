'use strict';
/**
 * What a run leaves behind: the machine it ran on, the results as JSON, an SVG bar chart of the
 * ratios to bare Fastify (hand-written, no dependency) and the markdown table, all under
 * bench/results/ (latest.*, latest-<db>-<cache>.* and a dated copy).
 */
const { execFileSync } = require('node:child_process');
const { mkdirSync, writeFileSync } = require('node:fs');
const os = require('node:os');
const { join } = require('node:path');

const root = join(__dirname, '..', '..');
const resultsDir = join(root, 'bench', 'results');

function git(args) {
  try {
    return execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
}

function machineInfo() {
  const cpus = os.cpus();
  return {
    cpuModel: cpus[0]?.model ?? 'unknown',
    cores: os.availableParallelism ? os.availableParallelism() : cpus.length,
    node: process.version,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    memoryGB: Math.round((os.totalmem() / 1024 ** 3) * 10) / 10,
    loadAverageAtStart: os.loadavg().map((n) => Math.round(n * 100) / 100),
  };
}

function gitInfo() {
  const dirty = git(['status', '--porcelain', '--untracked-files=no', '--', 'src', 'package.json', 'package-lock.json']);
  return { commit: git(['rev-parse', 'HEAD']), branch: git(['rev-parse', '--abbrev-ref', 'HEAD']), srcDirty: Boolean(dirty) };
}

const fmtInt = (n) => Math.round(n).toLocaleString('en-US');
const fmtMs = (n) => (n == null ? '–' : Number.isInteger(n) ? fmtInt(n) : n < 10 ? n.toFixed(2) : n.toFixed(1));
const fmtRatio = (r) => (r == null ? '–' : r < 0.01 ? r.toFixed(4) : r.toFixed(3));

function markdown(results) {
  const lines = [];
  const m = results.machine;
  lines.push(
    `${results.date.slice(0, 10)}, commit ${results.git.commit?.slice(0, 7) ?? '?'}${results.git.srcDirty ? ' (+ local changes)' : ''}, ` +
      `${results.config.db} + ${results.config.cache} cache, ${m.cpuModel}, ${m.cores} cores, Node ${m.node}; ` +
      `${results.pinning ? `servers on CPU ${results.pinning.servers}, autocannon on CPU ${results.pinning.load}` : 'not pinned'}; ` +
      `${results.config.connections} connections, ${results.config.warmupS} s warm-up + ${results.config.rounds ?? 1} × ${results.config.durationS} s per server, alternating (medians); ` +
      `service start to ready ${fmtInt(results.startupMs)} ms (demo seed included).`,
  );
  lines.push('');
  lines.push('| scenario | service req/s | p50 ms | p99 ms | bare Fastify req/s (same bytes) | ratio |');
  lines.push('|---|---:|---:|---:|---:|---:|');
  for (const s of results.scenarios) {
    const flag = s.service.non2xx || s.service.errors ? ` ⚠ ${s.service.non2xx} non-2xx, ${s.service.errors} errors` : '';
    lines.push(
      `| ${s.label}${flag} | ${fmtInt(s.service.rps)} | ${fmtMs(s.service.latency.p50)} | ${fmtMs(s.service.latency.p99)} | ${fmtInt(s.bare.rps)} | ${fmtRatio(s.ratio)} |`,
    );
  }
  if (results.exports.length > 0) {
    lines.push('');
    lines.push('| export of customers_grid (10,000 rows) | time | file | service RSS before → peak |');
    lines.push('|---|---:|---:|---:|');
    for (const e of results.exports)
      lines.push(`| ${e.format} | ${fmtInt(e.ms)} ms | ${fmtInt(e.fileKB)} KB | ${e.rssBeforeMB} → ${e.rssPeakMB} MB |`);
  }
  return lines.join('\n');
}

const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** Horizontal bars: each scenario's ratio to bare Fastify, with the issue's targets marked. */
function svg(results) {
  const rows = results.scenarios;
  const labelW = 330;
  const barW = 460;
  const rowH = 26;
  const top = 62;
  const width = labelW + barW + 90;
  const height = top + rows.length * rowH + 44;
  const maxValue = Math.max(0.1, ...rows.map((s) => s.ratio ?? 0), ...rows.map((s) => s.target ?? 0));
  const axisMax = Math.ceil(maxValue * 10 - 1e-9) / 10;
  const x = (v) => labelW + (v / axisMax) * barW;
  const out = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="12">`,
  );
  out.push(`<rect width="100%" height="100%" fill="#ffffff"/>`);
  out.push(
    `<text x="12" y="20" font-size="15" font-weight="bold">req/s of the service ÷ req/s of bare Fastify answering the same bytes (higher is better)</text>`,
  );
  const m = results.machine;
  out.push(
    `<text x="12" y="38" fill="#555">${esc(
      `${results.date.slice(0, 16).replace('T', ' ')} UTC · ${results.config.db} + ${results.config.cache} cache · commit ${results.git.commit?.slice(0, 7) ?? '?'}${results.git.srcDirty ? '+' : ''} · ${m.cpuModel}, ${m.cores} cores · Node ${m.node} · ${results.pinning ? 'pinned' : 'not pinned'}`,
    )}</text>`,
  );
  for (let t = 0; t <= axisMax + 1e-9; t += axisMax <= 0.3 ? 0.05 : 0.1) {
    const xt = x(t);
    out.push(`<line x1="${xt.toFixed(1)}" y1="${top - 6}" x2="${xt.toFixed(1)}" y2="${top + rows.length * rowH}" stroke="#e3e3e3"/>`);
    out.push(`<text x="${xt.toFixed(1)}" y="${top + rows.length * rowH + 16}" text-anchor="middle" fill="#555">${t.toFixed(2)}</text>`);
  }
  rows.forEach((s, i) => {
    const y = top + i * rowH;
    const r = s.ratio ?? 0;
    out.push(`<text x="${labelW - 8}" y="${y + 16}" text-anchor="end">${esc(s.label)}</text>`);
    out.push(`<rect x="${labelW}" y="${y + 4}" width="${Math.max(1, x(r) - labelW).toFixed(1)}" height="${rowH - 8}" fill="#3b78c2"/>`);
    out.push(`<text x="${(Math.max(x(r), labelW + 1) + 6).toFixed(1)}" y="${y + 16}" fill="#222">${fmtRatio(s.ratio)}</text>`);
    if (s.target != null) {
      const xt = x(s.target);
      out.push(`<line x1="${xt.toFixed(1)}" y1="${y + 1}" x2="${xt.toFixed(1)}" y2="${y + rowH - 1}" stroke="#d0392b" stroke-width="2" stroke-dasharray="3,2"/>`);
    }
  });
  out.push(
    `<text x="${labelW}" y="${height - 8}" fill="#555"><tspan fill="#d0392b">┆</tspan> target ratio (issue 14); sign-in is argon2-bound by design</text>`,
  );
  out.push('</svg>');
  return out.join('\n') + '\n';
}

/**
 * Writes a run's JSON (and chart) under bench/results: the bench as latest, latest-<db>-<cache> and
 * a dated copy; another kind of run (`soak`, `curves`, …) as <kind>-latest and a dated copy.
 * `chart`: the SVG text, or null for none. Returns the paths written, without extension.
 */
function writeResults(results, { kind = null, chart = kind ? null : svg(results) } = {}) {
  mkdirSync(resultsDir, { recursive: true });
  const json = JSON.stringify(results, null, 2) + '\n';
  const stamp = results.date.replace(/[:]/g, '-').replace(/\..*$/, '');
  const variant = `${results.config.db}-${results.config.cache === 'in-process' ? 'memory' : results.config.cache}`;
  const names = kind
    ? [`${kind}-latest`, `${stamp}-${kind}-${variant}`]
    : ['latest', `latest-${variant}`, `${stamp}-${variant}`];
  for (const name of names) {
    writeFileSync(join(resultsDir, `${name}.json`), json);
    if (chart !== null) writeFileSync(join(resultsDir, `${name}.svg`), chart);
  }
  return names.map((n) => join('bench', 'results', n));
}

module.exports = { machineInfo, gitInfo, markdown, svg, writeResults };
