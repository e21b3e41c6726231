/**
 * Three tiers (STYLE): unit beside the code, integration and e2e under test/.
 *
 * NestJS 12 ships as ES modules: see test/support/esm-transformer.js for how Jest loads them.
 * Our own TypeScript goes through ts-jest.
 */
const transform = {
  '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }],
  '^.+/node_modules/.+\\.m?js$': require.resolve('./test/support/esm-transformer.js'),
};
const common = {
  transform,
  transformIgnorePatterns: [],
  testEnvironment: 'node',
  moduleFileExtensions: ['ts', 'js', 'json'],
};

module.exports = {
  projects: [
    { ...common, displayName: 'unit', rootDir: '.', testMatch: ['<rootDir>/src/**/*.spec.ts'] },
    { ...common, displayName: 'int', rootDir: '.', testMatch: ['<rootDir>/test/**/*.int-spec.ts'] },
    { ...common, displayName: 'e2e', rootDir: '.', testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'] },
  ],
  testTimeout: 60000,
};
