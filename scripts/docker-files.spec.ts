import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { parse } from 'yaml';
import { dockerignore, parseDockerfile, stagesOf } from './docker-build-check';

const ROOT = join(__dirname, '..');
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');

type Json = Record<string, unknown>;
interface Validate {
  (data: unknown): boolean;
  errors?: Array<{ instancePath: string; message?: string }> | null;
}

/**
 * The Compose specification's JSON schema (docker/compose-spec.schema.json, vendored: see
 * docker/README.md) checked with Ajv 8 — the one ajv-formats (a devDependency) is built on; the
 * hoisted `ajv` is version 6.
 */
function composeValidator(): { validate: Validate; schema: Json } {
  const schema = JSON.parse(read('docker/compose-spec.schema.json')) as Json;
  const fromFormats = createRequire(require.resolve('ajv-formats'));
  const Ajv = (fromFormats('ajv') as { default: new (options: object) => { compile(s: object): Validate } })
    .default;
  // $schema names draft-07 by its https address, which Ajv knows by its http one; the draft is the same.
  const { $schema: _draft, ...body } = schema;
  const ajv = new Ajv({ strict: false, allErrors: true });
  (fromFormats('ajv-formats') as { default: (a: unknown) => void }).default(ajv);
  return { validate: ajv.compile(body), schema };
}

/** The keys of `object` the schema marks deprecated, at the top and in each service. */
function deprecatedKeys(compose: Json, schema: Json): string[] {
  const top = schema.properties as Record<string, Json>;
  const service = ((schema.definitions as Json).service as Json).properties as Record<string, Json>;
  const found = Object.keys(compose).filter((k) => top[k]?.deprecated === true);
  for (const [name, s] of Object.entries((compose.services ?? {}) as Record<string, Json>))
    found.push(
      ...Object.keys(s)
        .filter((k) => service[k]?.deprecated === true)
        .map((k) => `services.${name}.${k}`),
    );
  return found;
}

describe('the Docker files (docker/, .dockerignore)', () => {
  describe('docker/compose.yaml', () => {
    const compose = parse(read('docker/compose.yaml')) as Json;
    const { validate, schema } = composeValidator();

    it('should be valid against the Compose specification', () => {
      const valid = validate(compose);
      expect(validate.errors ?? []).toEqual([]);
      expect(valid).toBe(true);
    });

    it('should name its project and use no key the specification deprecates (no version:)', () => {
      expect(compose.name).toBe('mtb');
      expect(deprecatedKeys(compose, schema)).toEqual([]);
    });

    it('should catch an obsolete version and an unknown key, so the checks above can fail', () => {
      expect(deprecatedKeys({ version: '3.8', ...compose }, schema)).toEqual(['version']);
      expect(validate({ ...compose, servces: {} })).toBe(false);
      expect(validate({ ...compose, services: { service: { image: 'x', restart_policy: 'always' } } })).toBe(
        false,
      );
    });

    it('should build the service from the repository root with docker/Dockerfile', () => {
      const build = ((compose.services as Json).service as Json).build as Json;
      expect(build).toEqual({ context: '..', dockerfile: 'docker/Dockerfile' });
    });
  });

  describe('docker/Dockerfile', () => {
    const stages = stagesOf(parseDockerfile(read('docker/Dockerfile')));
    const builder = stages.find((s) => s.name === 'builder');
    const copied = (builder?.steps ?? [])
      .filter((s) => s.instruction === 'COPY' && s.flags.from === undefined)
      .flatMap((s) => s.args.split(/\s+/).slice(0, -1));

    it('should copy the script that `npm run build` runs (the image of issue 34 lacked it)', () => {
      const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
      const scripts = [...pkg.scripts.build.matchAll(/node (scripts\/[\w./-]+\.js)/g)].map((m) => m[1]);
      expect(scripts).toEqual(['scripts/build-if-stale.js']);
      for (const script of scripts) expect(copied).toContain(script);
      expect(copied).toEqual(
        expect.arrayContaining([
          'package.json',
          'package-lock.json',
          'tsconfig.json',
          'tsconfig.build.json',
          'src',
        ]),
      );
    });
  });

  describe('.dockerignore', () => {
    const ignored = dockerignore(read('.dockerignore'));

    it('should keep local state, secrets and build output out of the context', () => {
      const out = [
        '.git/HEAD',
        'node_modules/x/index.js',
        'client/node_modules/y',
        'dist/main.js',
        'data/app.sqlite',
        '.env',
        '.env.local',
        'npm-debug.log',
        'src/x.log',
      ];
      expect(out.filter((p) => !ignored(p))).toEqual([]);
    });

    it('should keep what the Dockerfile copies, and .env.example', () => {
      const kept = [
        'package.json',
        'package-lock.json',
        'tsconfig.build.json',
        'scripts/build-if-stale.js',
        'src/main.ts',
        'src/dist/x.ts',
        '.env.example',
      ];
      expect(kept.filter((p) => ignored(p))).toEqual([]);
    });
  });
});
