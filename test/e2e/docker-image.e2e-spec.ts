import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkImage } from '../../scripts/docker-build-check';

const DOCKERFILE = readFileSync(join(__dirname, '..', '..', 'docker', 'Dockerfile'), 'utf8');

/** The check's error message, or a failure when it passes. */
async function failure(dockerfileText: string): Promise<string> {
  try {
    await checkImage({ dockerfileText });
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
  throw new Error('the check passed');
}

/**
 * Issue 34 item 7: the image, built without a Docker daemon from exactly the files docker/Dockerfile
 * copies (scripts/docker-build-check.js; node_modules is the repository's, linked), then started
 * with its CMD until its HEALTHCHECK passes. Where a daemon exists, CI builds the real image too.
 */
describe('the production image (docker/Dockerfile) built from the files it copies', () => {
  it('builds dist/ from the COPY lines alone, and its CMD starts a service that passes the HEALTHCHECK', async () => {
    const { ran, skipped } = await checkImage();
    expect(ran.map((r) => r.command)).toEqual(
      expect.arrayContaining([
        'npm ci --ignore-scripts (dry run)',
        'npm run build',
        expect.stringMatching(/^CMD node dist\/main\.js; HEALTHCHECK passed$/),
      ]),
    );
    // Installing is a dry run here; each step not run is named, none silently dropped.
    expect(skipped.map((s) => s.command)).toEqual(
      expect.arrayContaining(['npm ci --ignore-scripts', 'npm prune --omit=dev --ignore-scripts']),
    );
  }, 300_000);

  it('fails when the Dockerfile does not copy scripts/build-if-stale.js, as the image of issue 34 did', async () => {
    const without = DOCKERFILE.replace(/^COPY scripts\/build-if-stale\.js .*$/m, '');
    expect(without).not.toBe(DOCKERFILE);
    const message = await failure(without);
    expect(message).toMatch(/`npm run build` failed/);
    expect(message).toContain('build-if-stale.js');
  }, 120_000);

  it('fails when package-lock.json is not copied before npm ci', async () => {
    const without = DOCKERFILE.replace(
      /^COPY package\.json package-lock\.json \.\/$/m,
      'COPY package.json ./',
    );
    expect(without).not.toBe(DOCKERFILE);
    expect(await failure(without)).toMatch(/`npm ci --ignore-scripts --dry-run --offline[^`]*` failed/);
  }, 120_000);

  it('fails on a COPY of a file the build context leaves out (.dockerignore) or lacks', async () => {
    const secrets = DOCKERFILE.replace(/^COPY src \.\/src$/m, 'COPY src ./src\nCOPY .env ./');
    expect(await failure(secrets)).toMatch(/COPY \.env: not found in the build context/);
    const missing = DOCKERFILE.replace(/^COPY src \.\/src$/m, 'COPY src ./src\nCOPY no-such-file.js ./');
    expect(await failure(missing)).toMatch(/COPY no-such-file\.js: not found/);
  }, 120_000);
});
