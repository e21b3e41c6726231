import {
  CONNECTION_STRING_PREFIX,
  ConnectionStringCryptoError,
  decryptConnectionString,
  encryptConnectionString,
  isEncryptedConnectionString,
} from './connection-string.crypto';

const KEY_HEX = '7f3a1c9e5b2d4f6a8c0e1b3d5f7a9c2e4b6d8f0a1c3e5b7d9f2a4c6e8b0d1f3a';
const OTHER_KEY = Buffer.alloc(32, 7);
const URL = 'postgres://erp:s3cr%40t@db.example.com:5432/erp';

describe('connection string crypto (D3)', () => {
  it('should round-trip a URL in the enc:v1:<iv>:<tag>:<ciphertext> form', () => {
    const stored = encryptConnectionString(URL, KEY_HEX);
    expect(stored).toMatch(/^enc:v1:[0-9a-f]{24}:[0-9a-f]{32}:[0-9a-f]+$/);
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
    const [, , iv, tag, data] = stored.split(':');
    const flip = (hex: string) => (hex[0] === '0' ? '1' : '0') + hex.slice(1);
    for (const bad of [
      `${CONNECTION_STRING_PREFIX}${flip(iv)}:${tag}:${data}`,
      `${CONNECTION_STRING_PREFIX}${iv}:${flip(tag)}:${data}`,
      `${CONNECTION_STRING_PREFIX}${iv}:${tag}:${flip(data)}`,
    ]) {
      expect(() => decryptConnectionString(bad, KEY_HEX)).toThrow(/cannot be decrypted/);
    }
  });

  it('should refuse malformed stored values, including a truncated tag', () => {
    const stored = encryptConnectionString(URL, KEY_HEX);
    const [, , iv, tag, data] = stored.split(':');
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
});
