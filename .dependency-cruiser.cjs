/**
 * The floors of the house (docs/architecture.md): a folder of src/ may import its own floor and the
 * floors below it, never one above. Where a lower floor needs something of a higher one, the higher
 * module registers a hook at start-up (e.g. auth → records' RecordHooks). `npm run lint:floors`.
 */
const FLOORS = [
  ['config'],
  ['common'],
  ['database'],
  ['cache'],
  // Readiness flags, start-up and probes: they know the stores, no feature.
  ['health'],
  ['tenant', 'registry'],
  ['profile'],
  ['records'],
  ['auth'],
  // The background-job machine features run their long work on.
  ['jobs'],
  ['entity', 'dataview', 'workflow', 'catalog', 'config-delivery', 'admin', 'webhooks'],
  // Documentation and development pages over the features.
  ['openapi', 'dev-ui'],
  // The HTTP pipeline's app-wide pieces, then the application itself (src/*.ts).
  ['http'],
];

const folders = FLOORS.flat();
const above = (i) => FLOORS.slice(i + 1).flat();

module.exports = {
  forbidden: [
    ...FLOORS.map((floor, i) => ({
      name: `floor-${floor.join('-')}`,
      comment: `${floor.join(', ')} may not import a higher floor (${above(i).join(', ') || 'none'}) or the application root`,
      severity: 'error',
      from: { path: `^src/(${floor.join('|')})/`, pathNot: '\\.spec\\.ts$' },
      to: {
        path: [`^src/(${[...above(i), '__none__'].join('|')})/`, '^src/[^/]+\\.ts$'],
      },
    })),
    {
      name: 'floor-peers',
      comment: 'folders of one floor do not import each other both ways (no folder loop)',
      severity: 'error',
      from: { path: '^src/([^/]+)/' },
      to: { path: '^src/([^/]+)/', pathNot: '^src/$1/', circular: true },
    },
    {
      name: 'known-folders',
      comment: 'every folder of src/ has a floor in .dependency-cruiser.cjs',
      severity: 'error',
      from: { path: `^src/(?!(${folders.join('|')})/)[^/]+/` },
      to: {},
    },
    {
      name: 'no-circular',
      severity: 'error',
      from: { pathNot: '\\.spec\\.ts$' },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)node_modules/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
