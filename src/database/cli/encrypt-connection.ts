/**
 * `npm run -s connection:encrypt -- <url>` (or `… -- -` to read the URL from stdin, which keeps
 * the password out of the shell history): prints the stored form of an app_connections
 * `con_connection_string` (D3), encrypted with CONNECTION_ENCRYPTION_KEY (falls back to
 * TENANT_ENCRYPTION_KEY; .env, the environment, or ./data/.dev-secrets.json in development).
 * The URL is checked first; only the stored value goes to stdout, the matching
 * con_connection_type goes to stderr.
 */
import { errorMessage } from '../../common/errors/error-message';
import { existsSync, readFileSync } from 'node:fs';
import { parseArgs as utilParseArgs } from 'node:util';
import { ConfigValidationError, type AppConfig } from '../../config/config.schema';
import { DEV_SECRETS_FILE } from '../../config/dev-secrets';
import { configFromProcessEnv } from '../../config/environment';
import { encryptConnectionString } from '../connections/connection-string.crypto';
import { ConnectionUrlError, connectionTypeFor, parseConnectionUrl } from '../connections/connection-url';

const USAGE = `Usage: npm run -s connection:encrypt -- <url>
       echo '<url>' | npm run -s connection:encrypt -- -

Prints the encrypted value for app_connections.con_connection_string (D3), using
CONNECTION_ENCRYPTION_KEY (or TENANT_ENCRYPTION_KEY when that is unset).
URLs: postgres://user:pass@host:5432/db, mysql://…, mariadb://…, mssql://…,
      sqlite:///absolute/path.sqlite, sqlite:./relative/path.sqlite
`;

export class UsageError extends Error {}

/** The URL argument: one positional value, `-` = stdin. */
export function parseArgs(argv: readonly string[]): { url: string } | { stdin: true } | 'help' {
  const { values, positionals, tokens } = utilParseArgs({
    args: [...argv],
    options: { help: { type: 'boolean', short: 'h' } },
    allowPositionals: true,
    strict: false,
    tokens: true,
  });
  if (values.help) return 'help';
  const unknown = tokens.find((t) => t.kind === 'option' && t.name !== 'help');
  if (unknown?.kind === 'option') throw new UsageError(`Unknown option ${unknown.rawName}`);
  if (positionals.length > 1) throw new UsageError('Only one URL, please (quote it in the shell)');
  const value = positionals[0];
  if (value === undefined) throw new UsageError('A connection URL is required');
  return value === '-' ? { stdin: true } : { url: value };
}

function main(argv: readonly string[]): number {
  let args: ReturnType<typeof parseArgs>;
  try {
    args = parseArgs(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`connection:encrypt: ${err.message}\n\n${USAGE}`);
    return 1;
  }
  if (args === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  const url = ('url' in args ? args.url : readFileSync(0, 'utf8')).trim();

  let type: string;
  try {
    type = connectionTypeFor(parseConnectionUrl(url).type);
  } catch (err) {
    if (!(err instanceof ConnectionUrlError)) throw err;
    process.stderr.write(`connection:encrypt: invalid connection URL: ${err.message}\n\n${USAGE}`);
    return 1;
  }

  const hadDevSecrets = existsSync(DEV_SECRETS_FILE);
  let config: AppConfig;
  try {
    config = configFromProcessEnv();
  } catch (err) {
    if (!(err instanceof ConfigValidationError)) throw err;
    process.stderr.write(`connection:encrypt: ${err.message}\n`);
    return 1;
  }
  if (config.generatedSecrets.includes('TENANT_ENCRYPTION_KEY') && !hadDevSecrets) {
    process.stderr.write(
      `connection:encrypt: no key set; generated a development key in ${DEV_SECRETS_FILE}. ` +
        'Run the service from this directory (npm start) so that it uses the same key.\n',
    );
  }
  process.stdout.write(`${encryptConnectionString(url, config.crypto.connectionEncryptionKey)}\n`);
  process.stderr.write(`connection:encrypt: store con_connection_type = '${type}'\n`);
  return 0;
}

if (require.main === module) {
  try {
    process.exitCode = main(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`connection:encrypt failed: ${errorMessage(err)}\n`);
    process.exitCode = 1;
  }
}
