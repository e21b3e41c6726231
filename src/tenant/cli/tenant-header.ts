/**
 * `npm run -s tenant-header -- <tenantId> [--timestamp[=<unix seconds>]]`: prints an x-tenant-id
 * header value for a tenant id (the proxy's half, D7), encrypted with the configured
 * TENANT_ENCRYPTION_KEY (.env, the environment, or ./data/.dev-secrets.json in development, as
 * `npm start` reads it). Only the header goes to stdout, so that
 * `curl -H "x-tenant-id: $(npm run -s tenant-header -- 1)" ...` works.
 */
import { errorMessage } from '../../common/errors/error-message';
import { existsSync } from 'node:fs';
import { parseArgs as utilParseArgs } from 'node:util';
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

const OPTIONS = { timestamp: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } as const;

export function parseArgs(argv: readonly string[], nowS = Math.floor(Date.now() / 1000)): CliArgs | 'help' {
  // Not strict: `--timestamp` is a flag that may carry `=<seconds>`, which node:util has no type for.
  const { values, positionals, tokens } = utilParseArgs({
    args: [...argv],
    options: OPTIONS,
    allowPositionals: true,
    strict: false,
    tokens: true,
  });
  if (values.help) return 'help';
  const unknown = tokens.find((t) => t.kind === 'option' && !(t.name in OPTIONS));
  if (unknown?.kind === 'option') throw new UsageError(`Unknown option ${unknown.rawName}`);
  let timestamp: number | undefined;
  if (values.timestamp === true) timestamp = nowS;
  else if (typeof values.timestamp === 'string') {
    if (!/^\d{1,12}$/.test(values.timestamp))
      throw new UsageError(`--timestamp must be unix seconds (got "${values.timestamp}")`);
    timestamp = Number(values.timestamp);
  }
  if (positionals.length > 1)
    throw new UsageError(`Only one tenant id, please (got "${positionals[0]}" and "${positionals[1]}")`);
  const tenantId = positionals[0]?.trim();
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
