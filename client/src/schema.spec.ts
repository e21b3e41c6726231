import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

/** schema.d.ts is generated: it must be what openapi-typescript makes of the committed openapi.json. */
describe('client/src/schema.d.ts', () => {
  it('matches the generator output for client/openapi.json (else: npm run generate:types -w client)', () => {
    const script = join(__dirname, '..', 'scripts', 'check-schema.js');
    expect(() => execFileSync(process.execPath, [script], { stdio: 'pipe' })).not.toThrow();
  });
});
