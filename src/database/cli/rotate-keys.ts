/**
 * `npm run keys:rotate` (D57): re-encrypts every stored secret (STORED_SECRET_COLUMNS) under the
 * current CONNECTION_ENCRYPTION_KEY, reading what was written under any key of
 * CONNECTION_ENCRYPTION_KEY_PREVIOUS. Idempotent and resumable: run it again after an interruption,
 * or to check that nothing is left (exit code 0 and `0 to do`). Prints counts, never a value.
 * Exit code 1 when a value could be decrypted with none of the accepted keys.
 */
import { errorMessage } from '../../common/errors/error-message';
import { parseArgs } from 'node:util';
import { ConfigValidationError, type AppConfig } from '../../config/config.schema';
import { configFromProcessEnv } from '../../config/environment';
import { storedSecretKeyRing } from '../../config/key-ring';
import { createDataSource } from '../data-source.factory';
import { rotateStoredSecrets, type RotationCounts } from '../secrets/stored-secrets';

const USAGE = `Usage: npm run keys:rotate

Re-encrypts every stored secret (external connection strings, …) under the current
CONNECTION_ENCRYPTION_KEY (or TENANT_ENCRYPTION_KEY when that is unset). Values written under a
key of CONNECTION_ENCRYPTION_KEY_PREVIOUS are read with it. Safe to run again at any time.
`;

function line(counts: RotationCounts): string {
  return (
    `${counts.scanned} read, ${counts.reencrypted} re-encrypted, ${counts.current} already current, ` +
    `${counts.empty} empty, ${counts.changed} changed meanwhile (run again), ${counts.failed} undecryptable`
  );
}

export async function main(
  argv: readonly string[],
  out = process.stdout,
  err = process.stderr,
): Promise<number> {
  const { values } = parseArgs({ args: [...argv], options: { help: { type: 'boolean', short: 'h' } } });
  if (values.help) {
    out.write(USAGE);
    return 0;
  }
  let config: AppConfig;
  try {
    config = configFromProcessEnv();
  } catch (e) {
    if (!(e instanceof ConfigValidationError)) throw e;
    err.write(`keys:rotate: ${e.message}\n`);
    return 1;
  }
  const keys = storedSecretKeyRing(config.crypto);
  out.write(
    `keys:rotate: current key ${keys.current.id}; also reading ${
      keys.all.length > 1
        ? keys.all
            .slice(1)
            .map((k) => k.id)
            .join(', ')
        : 'no previous key'
    }\n`,
  );
  const ds = createDataSource(config.db);
  await ds.initialize();
  let failed = 0;
  let todo = 0;
  try {
    const results = await rotateStoredSecrets(ds, keys, (target, counts) =>
      out.write(`keys:rotate: ${target.table}.${target.column}: ${line(counts)}…\n`),
    );
    for (const [target, counts] of results) {
      out.write(`keys:rotate: ${target.table}.${target.column}: ${line(counts)}\n`);
      for (const key of counts.failedKeys)
        err.write(`keys:rotate: cannot decrypt ${key} with any accepted key\n`);
      failed += counts.failed;
      todo += counts.changed + counts.failed;
    }
  } finally {
    await ds.destroy();
  }
  out.write(`keys:rotate: done, ${todo} to do\n`);
  return failed > 0 ? 1 : 0;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => (process.exitCode = code),
    (e: unknown) => {
      process.stderr.write(`keys:rotate failed: ${errorMessage(e)}\n`);
      process.exitCode = 1;
    },
  );
}
