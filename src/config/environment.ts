import { existsSync } from 'node:fs';
import { loadOrCreateDevSecrets } from './dev-secrets';
import { AppConfig, ConfigValidationError, loadConfig } from './config.schema';

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

/** For process entry points: the config, or every bad variable on stderr and exit code 1. */
export function configOrExit(): AppConfig {
  try {
    return configFromProcessEnv();
  } catch (err) {
    if (err instanceof ConfigValidationError) {
      process.stderr.write(`${err.message}\nSee .env.example for every variable and its default.\n`);
      process.exit(1);
    }
    throw err;
  }
}
