import { randomBytes } from 'node:crypto';
import type { AppConfig } from '../config/config.schema';
import { devHeaders } from './openapi.setup';

describe('devHeaders', () => {
  const repository = {
    activeTenants: () => Promise.resolve([{ id: '1', code: 'acme', name: 'Acme Corporation' }]),
  };
  const config = (nodeEnv: AppConfig['nodeEnv']) =>
    ({
      nodeEnv,
      isProduction: nodeEnv === 'production',
      crypto: { tenantEncryptionKey: randomBytes(32).toString('hex'), connectionEncryptionKey: '' },
    }) as Pick<AppConfig, 'isProduction' | 'nodeEnv' | 'crypto'>;

  it('should list a ready-made header per active tenant outside production', async () => {
    const text = await devHeaders(config('development'), repository);
    expect(text).toContain('**acme**');
    expect(text).toMatch(/"ciphertext":"[0-9a-f]+"/);
  });

  it('should never list headers in production', async () => {
    expect(await devHeaders(config('production'), repository)).toBe('');
  });
});
