import { randomBytes } from 'node:crypto';
import {
  decryptTenantHeader,
  encryptTenantHeader,
  isHeaderExpired,
  TENANT_HEADER_MAX_FUTURE_SKEW_S,
  TenantHeaderError,
} from './tenant-header.crypto';

const KEY = randomBytes(32).toString('hex');

function reasonOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof TenantHeaderError) return err.reason;
    throw err;
  }
  return 'ok';
}

describe('tenant header crypto (D5-D6)', () => {
  it('should round-trip a tenant id with a hex key and with a base64 key', () => {
    expect(decryptTenantHeader(encryptTenantHeader(42, KEY), KEY)).toEqual({ type: 'tenant', id: '42' });
    const b64 = Buffer.from(KEY, 'hex').toString('base64');
    expect(decryptTenantHeader(encryptTenantHeader('7', b64), KEY).id).toBe('7');
  });

  it('should use a fresh salt and nonce for every header', () => {
    const a = JSON.parse(encryptTenantHeader(1, KEY));
    const b = JSON.parse(encryptTenantHeader(1, KEY));
    expect(a.salt).not.toBe(b.salt);
    expect(a.nonce).not.toBe(b.nonce);
    expect(a.ciphertext).not.toBe(b.ciphertext);
    expect(a.algorithm).toBe('aes-256-gcm');
  });

  it('should answer decryption_failed for a missing or malformed server key', () => {
    const header = encryptTenantHeader(1, KEY);
    expect(reasonOf(() => decryptTenantHeader(header, ''))).toBe('decryption_failed');
    expect(reasonOf(() => decryptTenantHeader(header, 'not-a-key'))).toBe('decryption_failed');
  });

  it('should classify format problems before cryptographic ones', () => {
    expect(reasonOf(() => decryptTenantHeader(undefined, KEY))).toBe('required');
    expect(reasonOf(() => decryptTenantHeader('   ', KEY))).toBe('required');
    expect(reasonOf(() => decryptTenantHeader('[1,2]', KEY))).toBe('invalid_format_not_encrypted');
    expect(reasonOf(() => decryptTenantHeader('{"ciphertext":"","nonce":"a","salt":"b"}', KEY))).toBe(
      'invalid_format_not_encrypted',
    );
    expect(reasonOf(() => decryptTenantHeader('{"ciphertext":"zz","nonce":"a","salt":"b"}', KEY))).toBe(
      'decryption_failed',
    );
  });

  it('should refuse ids that are not positive 32-bit integers', () => {
    expect(() => encryptTenantHeader('abc', KEY)).toThrow();
  });

  it('should expire a header by its timestamp only when a max age is set (D6)', () => {
    const now = 1_800_000_000;
    expect(isHeaderExpired({ type: 'tenant', id: '1', timestamp: now - 100 }, 0, now)).toBe(false);
    expect(isHeaderExpired({ type: 'tenant', id: '1', timestamp: now - 100 }, 60, now)).toBe(true);
    expect(isHeaderExpired({ type: 'tenant', id: '1', timestamp: now - 30 }, 60, now)).toBe(false);
    expect(isHeaderExpired({ type: 'tenant', id: '1' }, 60, now)).toBe(false);
  });

  it('should refuse a header stamped beyond the clock skew in the future when a max age is set', () => {
    const now = 1_800_000_000;
    const skew = TENANT_HEADER_MAX_FUTURE_SKEW_S;
    const at = (timestamp: number, maxAgeS = 300) =>
      isHeaderExpired({ type: 'tenant', id: '1', timestamp }, maxAgeS, now);
    expect(at(now)).toBe(false);
    expect(at(now + skew)).toBe(false);
    expect(at(now + skew + 1)).toBe(true);
    expect(at(now + 10 * 365 * 24 * 3600)).toBe(true);
    // Off without a max age (D6), as for old headers.
    expect(at(now + 10 * 365 * 24 * 3600, 0)).toBe(false);
  });

  it('should refuse a future-stamped header through decrypt + isHeaderExpired like an expired one', () => {
    const now = Date.now() / 1000;
    const future = decryptTenantHeader(encryptTenantHeader('7', KEY, Math.floor(now) + 3600), KEY);
    const fresh = decryptTenantHeader(encryptTenantHeader('7', KEY, Math.floor(now)), KEY);
    expect(isHeaderExpired(future, 300, now)).toBe(true);
    expect(isHeaderExpired(fresh, 300, now)).toBe(false);
  });
});
