/**
 * Jest transformer for node_modules: NestJS 12 and a few of its dependencies ship ES modules
 * only. Node 20.19+ loads them from our CommonJS build through require(esm), but Jest's module
 * runtime cannot, so ES-module packages (nearest package.json says "type": "module") are compiled
 * to CommonJS with Babel; every other file passes through untouched.
 */
const { dirname, join } = require('node:path');
const { existsSync, readFileSync } = require('node:fs');
const babelJest = require('babel-jest').default;

const babel = babelJest.createTransformer({
  babelrc: false,
  configFile: false,
  plugins: [
    require.resolve('./babel-esm-require.js'),
    'babel-plugin-transform-import-meta',
    '@babel/plugin-transform-dynamic-import',
    '@babel/plugin-transform-modules-commonjs',
  ],
});

const typeByDir = new Map();
function isEsm(file) {
  if (file.endsWith('.mjs')) return true;
  let dir = dirname(file);
  const seen = [];
  while (dir !== dirname(dir)) {
    if (typeByDir.has(dir)) break;
    seen.push(dir);
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        const parsed = JSON.parse(readFileSync(pkg, 'utf8'));
        if (parsed.name || parsed.type) {
          typeByDir.set(dir, parsed.type === 'module');
          break;
        }
      } catch {
        // not a package manifest; keep walking up
      }
    }
    dir = dirname(dir);
  }
  const result = typeByDir.get(dir) ?? false;
  for (const d of seen) typeByDir.set(d, result);
  return result;
}

module.exports = {
  canInstrument: false,
  getCacheKey(source, path, options) {
    return isEsm(path) ? babel.getCacheKey(source, path, options) : `plain:${path}:${source.length}`;
  },
  process(source, path, options) {
    return isEsm(path) ? babel.process(source, path, options) : { code: source };
  },
};
