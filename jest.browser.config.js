/**
 * `npm run test:browser`: Swagger UI and the reference page in the machine's Chromium
 * (test/browser/chromium.ts finds it; no browser is downloaded). Apart from `npm test` because it
 * needs Chromium; without one the global setup stops at once, saying so.
 */
const { projects, testTimeout } = require('./jest.config.js');

const e2e = projects.find((p) => p.displayName === 'e2e');

module.exports = {
  ...e2e,
  displayName: 'browser',
  testMatch: ['<rootDir>/test/browser/**/*.browser-spec.ts'],
  globalSetup: '<rootDir>/test/browser/global-setup.ts',
  testTimeout,
};
