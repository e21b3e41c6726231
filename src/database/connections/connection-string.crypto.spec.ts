import { createCipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { keyIdOf, keyRing } from '../../config/key-ring';
import {
  CONNECTION_STRING_PREFIX,
  needsReencryption,
  storedKeyId,
  ConnectionStringCryptoError,
  decryptConnectionString,
  encryptConnectionString,
  isEncryptedConnectionString,
} from './connection-string.crypto';

const KEY_HEX = '7f3a1c9e5b2d4f6a8c0e1b3d5f7a9c2e4b6d8f0a1c3e5b7d9f2a4c6e8b0d1f3a';
const OTHER_KEY = Buffer.alloc(32, 7);
const URL = 'postgres://erp:s3cr%40t@db.example.com:5432/erp';

/** The form written before key ids (D57), built here independently: `enc:v1:<iv>:<tag>:<ct>`. */
function encryptV1(plain: string, master: Buffer): string {
  const key = Buffer.from(
    hkdfSync('sha256', master, Buffer.alloc(0), Buffer.from('mtb:app_connections:v1'), 32),
  );
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const ct = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return `enc:v1:${iv.toString('hex')}:${cipher.getAuthTag().toString('hex')}:${ct.toString('hex')}`;
}

describe('connection string crypto (D3)', () => {
  it('should round-trip a URL in the enc:v2:<key id>:<iv>:<tag>:<ciphertext> form', () => {
    const stored = encryptConnectionString(URL, KEY_HEX);
    expect(stored).toMatch(/^enc:v2:[0-9a-f]{8}:[0-9a-f]{24}:[0-9a-f]{32}:[0-9a-f]+$/);
    expect(storedKeyId(stored)).toBe(keyIdOf(Buffer.from(KEY_HEX, 'hex')));
    expect(stored).not.toContain('erp');
    expect(isEncryptedConnectionString(stored)).toBe(true);
    expect(decryptConnectionString(stored, KEY_HEX)).toBe(URL);
  });

  it('should accept the key as hex, base64 or a Buffer', () => {
    const buf = Buffer.from(KEY_HEX, 'hex');
    const stored = encryptConnectionString(URL, buf);
    expect(decryptConnectionString(stored, buf.toString('base64'))).toBe(URL);
    expect(decryptConnectionString(stored, KEY_HEX)).toBe(URL);
  });

  it('should use a fresh IV per call', () => {
    expect(encryptConnectionString(URL, KEY_HEX)).not.toBe(encryptConnectionString(URL, KEY_HEX));
  });

  it('should refuse a plain string without echoing it', () => {
    expect(isEncryptedConnectionString(URL)).toBe(false);
    expect(() => decryptConnectionString(URL, KEY_HEX)).toThrow(ConnectionStringCryptoError);
    expect(() => decryptConnectionString(URL, KEY_HEX)).toThrow(/not encrypted/);
    try {
      decryptConnectionString(URL, KEY_HEX);
    } catch (err) {
      expect((err as Error).message).not.toContain('s3cr');
    }
  });

  it('should refuse a wrong key', () => {
    const stored = encryptConnectionString(URL, KEY_HEX);
    expect(() => decryptConnectionString(stored, OTHER_KEY)).toThrow(/cannot be decrypted/);
  });

  it('should refuse a tampered ciphertext, tag or IV', () => {
    const stored = encryptConnectionString(URL, KEY_HEX);
    const [, , kid, iv, tag, data] = stored.split(':');
    const flip = (hex: string) => (hex[0] === '0' ? '1' : '0') + hex.slice(1);
    for (const bad of [
      `${CONNECTION_STRING_PREFIX}${kid}:${flip(iv)}:${tag}:${data}`,
      `${CONNECTION_STRING_PREFIX}${kid}:${iv}:${flip(tag)}:${data}`,
      `${CONNECTION_STRING_PREFIX}${kid}:${iv}:${tag}:${flip(data)}`,
    ]) {
      expect(() => decryptConnectionString(bad, KEY_HEX)).toThrow(/cannot be decrypted/);
    }
  });

  it('should refuse malformed stored values, including a truncated tag', () => {
    const stored = encryptConnectionString(URL, KEY_HEX);
    const [, , , iv, tag, data] = stored.split(':');
    for (const bad of [
      'enc:v1:',
      'enc:v1:zz:yy:xx',
      `enc:v1:${iv}:${tag.slice(0, 24)}:${data}`,
      `enc:v1:${iv}:${tag}:${data}abc`,
      `enc:v2:${iv}:${tag}:${data}`,
    ]) {
      expect(() => decryptConnectionString(bad, KEY_HEX)).toThrow(ConnectionStringCryptoError);
    }
  });

  it('should refuse an unusable key and an empty string', () => {
    expect(() => encryptConnectionString(URL, 'short')).toThrow(/32 bytes/);
    expect(() => encryptConnectionString('  ', KEY_HEX)).toThrow(/empty/);
  });

  it('should tolerate surrounding whitespace of the stored value', () => {
    expect(decryptConnectionString(` ${encryptConnectionString(URL, KEY_HEX)}\n`, KEY_HEX)).toBe(URL);
  });

  describe('key rotation (D57)', () => {
    const oldKey = Buffer.from(KEY_HEX, 'hex');
    const newKey = Buffer.alloc(32, 9);

    it('should decrypt a value of a previous key by its id, and say it needs re-encrypting', () => {
      const stored = encryptConnectionString(URL, oldKey);
      const ring = keyRing(newKey, [oldKey]);
      expect(decryptConnectionString(stored, ring)).toBe(URL);
      expect(needsReencryption(stored, ring)).toBe(true);
      const again = encryptConnectionString(URL, ring);
      expect(storedKeyId(again)).toBe(keyIdOf(newKey));
      expect(needsReencryption(again, ring)).toBe(false);
      expect(decryptConnectionString(again, ring)).toBe(URL);
    });

    it('should read the earlier form without a key id with any accepted key', () => {
      const v1 = encryptV1(URL, oldKey);
      expect(isEncryptedConnectionString(v1)).toBe(true);
      expect(decryptConnectionString(v1, keyRing(newKey, [oldKey]))).toBe(URL);
      expect(needsReencryption(v1, keyRing(oldKey))).toBe(true);
      expect(() => decryptConnectionString(v1, newKey)).toThrow(/cannot be decrypted/);
    });

    it('should refuse a key id that is not accepted (even if another key would fit)', () => {
      const stored = encryptConnectionString(URL, oldKey);
      expect(() => decryptConnectionString(stored, keyRing(newKey))).toThrow(
        /neither CONNECTION_ENCRYPTION_KEY/,
      );
      const relabelled = stored.replace(/^enc:v2:[0-9a-f]{8}:/, `enc:v2:${keyIdOf(newKey)}:`);
      expect(() => decryptConnectionString(relabelled, keyRing(newKey, [oldKey]))).toThrow(
        /cannot be decrypted/,
      );
    });
  });
});
