/** Three tiers (STYLE): unit beside the code, integration and e2e under test/. */
const transform = { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] };
const common = { transform, testEnvironment: 'node', moduleFileExtensions: ['ts', 'js', 'json'] };

module.exports = {
  projects: [
    { ...common, displayName: 'unit', rootDir: '.', testMatch: ['<rootDir>/src/**/*.spec.ts'] },
    { ...common, displayName: 'int', rootDir: '.', testMatch: ['<rootDir>/test/**/*.int-spec.ts'], slowTestThreshold: 30 },
    { ...common, displayName: 'e2e', rootDir: '.', testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'], slowTestThreshold: 30 },
  ],
  testTimeout: 60000,
};
