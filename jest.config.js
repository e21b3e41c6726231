/**
 * Three tiers (STYLE): unit beside the code (src, client/src, scripts: *.spec.ts), integration and
 * e2e under test/. This is `npm test` (and `npx jest`): it needs Node and the local database
 * services only. The browser tier needs Chromium and has a configuration of its own:
 * jest.browser.config.js.
 */
const common = {
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
  testEnvironment: 'node',
  moduleFileExtensions: ['ts', 'js', 'json'],
};

module.exports = {
  projects: [
    { ...common, displayName: 'unit', rootDir: '.', testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/client/src/**/*.spec.ts', '<rootDir>/scripts/**/*.spec.ts'] },
    { ...common, displayName: 'int', rootDir: '.', testMatch: ['<rootDir>/test/**/*.int-spec.ts'] },
    { ...common, displayName: 'e2e', rootDir: '.', testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'] },
  ],
  testTimeout: 60000,
};
