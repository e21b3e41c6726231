import { createCipheriv, hkdfSync, randomBytes } from 'node:crypto';

/**
 * Builds x-tenant-id values the way an attacker or a broken proxy might: any plaintext, any key,
 * any tag length. Mirrors D5's construction independently of the code under test.
 */
export function forgeHeader(
  plaintext: string,
  keyHex: string,
  options: { tagBytes?: number; algorithm?: string } = {},
): Record<string, string> {
  const salt = randomBytes(16);
  const nonce = randomBytes(16);
  const key = Buffer.from(
    hkdfSync('sha256', Buffer.from(keyHex, 'hex'), salt, Buffer.from('x-tenant-id'), 32),
  );
  const cipher = createCipheriv('aes-256-gcm', key, nonce, { authTagLength: 16 });
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  const tag = cipher.getAuthTag().subarray(0, options.tagBytes ?? 16);
  return {
    ciphertext: ciphertext.toString('hex'),
    nonce: nonce.toString('hex'),
    salt: salt.toString('hex'),
    authTag: tag.toString('hex'),
    algorithm: options.algorithm ?? 'aes-256-gcm',
  };
}

/** Flips one bit of a hex string at the given byte. */
export function flipHex(hex: string, byte = 0): string {
  const buf = Buffer.from(hex, 'hex');
  buf[byte] ^= 0x01;
  return buf.toString('hex');
}
