import { existsSync } from 'node:fs';
import { loadOrCreateDevSecrets } from './dev-secrets';
import { AppConfig, loadConfig } from './config.schema';

/**
 * Reads `.env` (when present) into the process environment and validates it. The only caller of
 * process.env in the code base.
 */
export function configFromProcessEnv(overrides: Record<string, string | undefined> = {}): AppConfig {
  if (existsSync('.env')) process.loadEnvFile('.env');
  return loadConfig(
    { ...process.env, ...overrides },
    {
      devSecrets: loadOrCreateDevSecrets,
      isTty: process.stdout.isTTY === true,
    },
  );
}
