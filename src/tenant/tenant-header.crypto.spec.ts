import { createHash, randomBytes } from 'node:crypto';
import { keyRing } from '../config/key-ring';
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

  describe('key rotation (D57)', () => {
    const OLD = randomBytes(32);
    const NEW = randomBytes(32);
    const idOf = (key: Buffer) => createHash('sha256').update(key).digest('hex').slice(0, 8);
    const withoutKid = (header: string) => {
      const { kid: _kid, ...rest } = JSON.parse(header) as Record<string, unknown>;
      return JSON.stringify(rest);
    };

    it("should write the key's id as kid and decrypt by it, with the key current or previous", () => {
      const header = encryptTenantHeader(7, OLD);
      expect(JSON.parse(header).kid).toBe(idOf(OLD));
      expect(decryptTenantHeader(header, keyRing(OLD)).id).toBe('7');
      expect(decryptTenantHeader(header, keyRing(NEW, [OLD])).id).toBe('7');
      // Step 1 of the runbook: the service accepts the new key before the proxy uses it.
      expect(decryptTenantHeader(encryptTenantHeader(7, NEW), keyRing(OLD, [NEW])).id).toBe('7');
    });

    it('should refuse an unknown or malformed kid like any undecryptable header', () => {
      const header = encryptTenantHeader(7, OLD);
      expect(reasonOf(() => decryptTenantHeader(header, keyRing(NEW)))).toBe('decryption_failed');
      for (const kid of ['deadbeef', 'DEAD', 42, null]) {
        const forged = JSON.stringify({ ...JSON.parse(header), kid });
        expect(reasonOf(() => decryptTenantHeader(forged, keyRing(OLD)))).toBe('decryption_failed');
      }
      // The id picks the key: the right key under another key's id is refused.
      const relabelled = JSON.stringify({ ...JSON.parse(header), kid: idOf(NEW) });
      expect(reasonOf(() => decryptTenantHeader(relabelled, keyRing(NEW, [OLD])))).toBe('decryption_failed');
    });

    it('should try every accepted key for a header without kid (made before key ids)', () => {
      const legacy = withoutKid(encryptTenantHeader(9, OLD));
      expect(decryptTenantHeader(legacy, keyRing(NEW, [OLD])).id).toBe('9');
      expect(reasonOf(() => decryptTenantHeader(legacy, keyRing(NEW)))).toBe('decryption_failed');
    });
  });
});
