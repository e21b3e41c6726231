import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { decodeKey32 } from '../../config/config.schema';

/**
 * `app_connections.con_connection_string` at rest (D3): AES-256-GCM under CONNECTION_ENCRYPTION_KEY
 * (the config falls back to TENANT_ENCRYPTION_KEY). Stored form:
 *
 *   enc:v1:<iv, 12 bytes hex>:<auth tag, 16 bytes hex>:<ciphertext hex>
 *
 * The AES key is HKDF-SHA256(ikm = the configured 32-byte key, salt = empty,
 * info = "mtb:app_connections:v1"), so that a key shared with the tenant header (the fallback)
 * never encrypts two kinds of data directly. A plain (unencrypted) value is refused by the loader.
 */
export const CONNECTION_STRING_PREFIX = 'enc:v1:';
const ALGORITHM = 'aes-256-gcm';
const HKDF_INFO = Buffer.from('mtb:app_connections:v1');
const IV_BYTES = 12;
const TAG_BYTES = 16;
const STORED = /^enc:v1:([0-9a-f]{24}):([0-9a-f]{32}):((?:[0-9a-f]{2})+)$/i;

export class ConnectionStringCryptoError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConnectionStringCryptoError';
  }
}

/**
 * The HKDF `info` of another secret kept at rest the same way (D54: a webhook's signing secret is
 * `mtb:app_webhooks:v1`), so that one configured key never encrypts two kinds of data directly.
 */
export type SecretPurpose = 'mtb:app_connections:v1' | 'mtb:app_webhooks:v1';

function aesKey(key: string | Buffer, info: Buffer = HKDF_INFO): Buffer {
  const master = Buffer.isBuffer(key) ? key : decodeKey32(key);
  if (!master || master.length !== 32) {
    throw new ConnectionStringCryptoError(
      'CONNECTION_ENCRYPTION_KEY must be 32 bytes as 64 hex characters or base64',
    );
  }
  return Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), info, 32));
}

/** True when the value has the stored form's prefix (it may still fail to decrypt). */
export function isEncryptedConnectionString(value: string): boolean {
  return value.trim().startsWith(CONNECTION_STRING_PREFIX);
}

/** Encrypts a connection URL into the stored form; a fresh random IV every call. */
export function encryptConnectionString(
  plain: string,
  key: string | Buffer,
  purpose: SecretPurpose = 'mtb:app_connections:v1',
): string {
  if (plain.trim() === '') throw new ConnectionStringCryptoError('The connection string is empty');
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv(ALGORITHM, aesKey(key, Buffer.from(purpose)), iv, {
    authTagLength: TAG_BYTES,
  });
  const ciphertext = Buffer.concat([cipher.update(plain.trim(), 'utf8'), cipher.final()]);
  return `${CONNECTION_STRING_PREFIX}${iv.toString('hex')}:${cipher.getAuthTag().toString('hex')}:${ciphertext.toString('hex')}`;
}

/**
 * Decrypts the stored form. Throws ConnectionStringCryptoError for a plain value, a malformed
 * value, a wrong key or tampered data; the message never contains the value.
 */
export function decryptConnectionString(
  stored: string,
  key: string | Buffer,
  purpose: SecretPurpose = 'mtb:app_connections:v1',
): string {
  const value = stored.trim();
  if (!isEncryptedConnectionString(value)) {
    throw new ConnectionStringCryptoError(
      `not encrypted (expected ${CONNECTION_STRING_PREFIX}…; plain connection strings are refused)`,
    );
  }
  const m = STORED.exec(value);
  if (!m) throw new ConnectionStringCryptoError('malformed encrypted value');
  const [, ivHex, tagHex, dataHex] = m;
  const k = aesKey(key, Buffer.from(purpose));
  try {
    const decipher = createDecipheriv(ALGORITHM, k, Buffer.from(ivHex, 'hex'), { authTagLength: TAG_BYTES });
    decipher.setAuthTag(Buffer.from(tagHex, 'hex'));
    return Buffer.concat([decipher.update(Buffer.from(dataHex, 'hex')), decipher.final()]).toString('utf8');
  } catch {
    throw new ConnectionStringCryptoError(
      'cannot be decrypted (wrong CONNECTION_ENCRYPTION_KEY or tampered value)',
    );
  }
}
