/** Three tiers: unit beside the code (src, client/src, scripts: *.spec.ts), integration and e2e under test/. */
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
    { ...common, displayName: 'browser', rootDir: '.', testMatch: ['<rootDir>/test/browser/**/*.browser-spec.ts'] },
  ],
  testTimeout: 60000,
};
