/**
 * `npm run -s tenant-header -- <tenantId> [--timestamp[=<unix seconds>]]`: prints an x-tenant-id
 * header value for a tenant id (the proxy's half, D7), encrypted with the configured
 * TENANT_ENCRYPTION_KEY (.env, the environment, or ./data/.dev-secrets.json in development, as
 * `npm start` reads it). Only the header goes to stdout, so that
 * `curl -H "x-tenant-id: $(npm run -s tenant-header -- 1)" ...` works.
 */
import { errorMessage } from '../../common/errors/error-message';
import { existsSync } from 'node:fs';
import { ConfigValidationError, type AppConfig } from '../../config/config.schema';
import { DEV_SECRETS_FILE } from '../../config/dev-secrets';
import { configFromProcessEnv } from '../../config/environment';
import { encryptTenantHeader } from '../tenant-header.crypto';

const USAGE = `Usage: npm run -s tenant-header -- <tenantId> [--timestamp[=<unix seconds>]]

Prints the x-tenant-id header value for a tenant id, encrypted with TENANT_ENCRYPTION_KEY.
  --timestamp        put the current time into the payload (for TENANT_HEADER_MAX_AGE_S, D6)
  --timestamp=<n>    put unix time <n> into the payload

Example: curl -H "x-tenant-id: $(npm run -s tenant-header -- 1)" http://localhost:8008/api/v1/auth/tenant-config
`;

/** Largest id the service accepts (spec §2.2 INT; see decryptTenantHeader). */
const MAX_TENANT_ID = 2147483647;

export interface CliArgs {
  tenantId: string;
  timestamp?: number;
}

export class UsageError extends Error {}

export function parseArgs(argv: readonly string[], nowS = Math.floor(Date.now() / 1000)): CliArgs | 'help' {
  let tenantId: string | undefined;
  let timestamp: number | undefined;
  for (const arg of argv) {
    if (arg === '-h' || arg === '--help') return 'help';
    if (arg === '--timestamp') {
      timestamp = nowS;
    } else if (arg.startsWith('--timestamp=')) {
      const value = arg.slice('--timestamp='.length);
      if (!/^\d{1,12}$/.test(value))
        throw new UsageError(`--timestamp must be unix seconds (got "${value}")`);
      timestamp = Number(value);
    } else if (arg.startsWith('-')) {
      throw new UsageError(`Unknown option ${arg}`);
    } else if (tenantId !== undefined) {
      throw new UsageError(`Only one tenant id, please (got "${tenantId}" and "${arg}")`);
    } else {
      tenantId = arg.trim();
    }
  }
  if (tenantId === undefined) throw new UsageError('A tenant id is required');
  if (!/^\d{1,10}$/.test(tenantId) || Number(tenantId) < 1 || Number(tenantId) > MAX_TENANT_ID) {
    throw new UsageError(
      `The tenant id must be a whole number from 1 to ${MAX_TENANT_ID} (got "${tenantId}")`,
    );
  }
  return { tenantId: String(Number(tenantId)), ...(timestamp !== undefined ? { timestamp } : {}) };
}

function main(argv: readonly string[]): number {
  let args: CliArgs | 'help';
  try {
    args = parseArgs(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`tenant-header: ${err.message}\n\n${USAGE}`);
    return 1;
  }
  if (args === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }

  const hadDevSecrets = existsSync(DEV_SECRETS_FILE);
  let config: AppConfig;
  try {
    config = configFromProcessEnv();
  } catch (err) {
    if (!(err instanceof ConfigValidationError)) throw err;
    process.stderr.write(`tenant-header: ${err.message}\n`);
    return 1;
  }
  if (config.generatedSecrets.includes('TENANT_ENCRYPTION_KEY') && !hadDevSecrets) {
    process.stderr.write(
      `tenant-header: no TENANT_ENCRYPTION_KEY set; generated a development key in ${DEV_SECRETS_FILE}. ` +
        'Run the service from this directory (npm start) so that it uses the same key.\n',
    );
  }
  process.stdout.write(
    `${encryptTenantHeader(args.tenantId, config.crypto.tenantEncryptionKey, args.timestamp)}\n`,
  );
  return 0;
}

if (require.main === module) {
  try {
    process.exitCode = main(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`tenant-header failed: ${errorMessage(err)}\n`);
    process.exitCode = 1;
  }
}
