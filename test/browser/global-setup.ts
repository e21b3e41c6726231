import { chromiumMissingMessage, findChromium } from './chromium';

/**
 * The browser project's global setup (jest.config.js): without Chromium, the tier stops here with
 * one message saying what it needs, instead of 15 failed launches.
 */
export default function globalSetup(): void {
  const { path, tried } = findChromium();
  if (!path) {
    const err = new Error(chromiumMissingMessage(tried));
    err.stack = err.message; // the message is the whole story; no trace of the setup itself
    throw err;
  }
  process.stdout.write(`\nBrowser tests: Chromium ${path}\n`);
}
