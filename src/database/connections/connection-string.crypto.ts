import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { decodeKey32 } from '../../config/config.schema';
import { KEY_ID, keyIdOf, keyRing, type KeyRing, type RingKey } from '../../config/key-ring';

/**
 * Stored secrets at rest (D3, D57): `app_connections.con_connection_string` and every other secret
 * column the service keeps, AES-256-GCM under CONNECTION_ENCRYPTION_KEY (the config falls back to
 * TENANT_ENCRYPTION_KEY). Written form:
 *
 *   enc:v2:<key id, 8 hex>:<iv, 12 bytes hex>:<auth tag, 16 bytes hex>:<ciphertext hex>
 *
 * The key id (D57) names the key it was written with, so a rotation can keep earlier keys in
 * CONNECTION_ENCRYPTION_KEY_PREVIOUS and `npm run keys:rotate` can tell what still needs
 * re-encrypting. The earlier form without a key id, `enc:v1:<iv>:<tag>:<ciphertext>`, is still read
 * (tried against every accepted key, current first) and is re-encrypted by keys:rotate.
 *
 * The AES key is HKDF-SHA256(ikm = the configured 32-byte key, salt = empty,
 * info = "mtb:app_connections:v1"), so that a key shared with the tenant header (the fallback)
 * never encrypts two kinds of data directly. A plain (unencrypted) value is refused by the loader.
 */
export const CONNECTION_STRING_PREFIX = 'enc:v2:';
const ALGORITHM = 'aes-256-gcm';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const STORED_V1 = /^enc:v1:([0-9a-f]{24}):([0-9a-f]{32}):((?:[0-9a-f]{2})+)$/i;
const STORED_V2 = /^enc:v2:([0-9a-f]{8}):([0-9a-f]{24}):([0-9a-f]{32}):((?:[0-9a-f]{2})+)$/i;

export class ConnectionStringCryptoError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConnectionStringCryptoError';
  }
}

/**
 * The HKDF `info` of each kind of secret kept at rest (D54: a webhook's signing secret is
 * `mtb:app_webhooks:v1`), so that one configured key never encrypts two kinds of data directly.
 */
export type SecretPurpose = 'mtb:app_connections:v1' | 'mtb:app_webhooks:v1';

const BAD_KEY = 'CONNECTION_ENCRYPTION_KEY must be 32 bytes as 64 hex characters or base64';

function masterKey(key: string | Buffer): Buffer {
  const master = Buffer.isBuffer(key) ? key : decodeKey32(key);
  if (!master || master.length !== 32) throw new ConnectionStringCryptoError(BAD_KEY);
  return master;
}

function ringOf(keys: string | Buffer | KeyRing): KeyRing {
  return typeof keys === 'string' || Buffer.isBuffer(keys) ? keyRing(masterKey(keys)) : keys;
}

function aesKey(master: Buffer, purpose: SecretPurpose): Buffer {
  return Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), Buffer.from(purpose), 32));
}

/** True when the value has a stored form's prefix (it may still fail to decrypt). */
export function isEncryptedConnectionString(value: string): boolean {
  const v = value.trim();
  return v.startsWith('enc:v1:') || v.startsWith(CONNECTION_STRING_PREFIX);
}

/**
 * Encrypts a secret into the stored form, under `keys`' current key (a bare key is a ring of one);
 * a fresh random IV every call.
 */
export function encryptConnectionString(
  plain: string,
  keys: string | Buffer | KeyRing,
  purpose: SecretPurpose = 'mtb:app_connections:v1',
): string {
  if (plain.trim() === '') throw new ConnectionStringCryptoError('The connection string is empty');
  const key = ringOf(keys).current;
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv(ALGORITHM, aesKey(key.bytes, purpose), iv, { authTagLength: TAG_BYTES });
  const ciphertext = Buffer.concat([cipher.update(plain.trim(), 'utf8'), cipher.final()]);
  return `${CONNECTION_STRING_PREFIX}${key.id}:${iv.toString('hex')}:${cipher.getAuthTag().toString('hex')}:${ciphertext.toString('hex')}`;
}

/** The key id a stored value names: its v2 key id, or undefined for the v1 form (no id). */
export function storedKeyId(stored: string): string | undefined {
  return STORED_V2.exec(stored.trim())?.[1]?.toLowerCase();
}

/** True when `stored` is not (yet) under `keys`' current key: keys:rotate re-encrypts it. */
export function needsReencryption(stored: string, keys: KeyRing): boolean {
  return storedKeyId(stored) !== keys.current.id;
}

/**
 * Decrypts the stored form with `keys` (current and previous, D57). Throws
 * ConnectionStringCryptoError for a plain value, a malformed value, an unknown key id, a wrong key
 * or tampered data; the message never contains the value.
 */
export function decryptConnectionString(
  stored: string,
  keys: string | Buffer | KeyRing,
  purpose: SecretPurpose = 'mtb:app_connections:v1',
): string {
  const value = stored.trim();
  if (!isEncryptedConnectionString(value)) {
    throw new ConnectionStringCryptoError(
      `not encrypted (expected ${CONNECTION_STRING_PREFIX}…; plain connection strings are refused)`,
    );
  }
  const ring = ringOf(keys);
  let candidates: readonly RingKey[];
  let ivHex: string, tagHex: string, dataHex: string;
  const v2 = STORED_V2.exec(value);
  const v1 = v2 ? null : STORED_V1.exec(value);
  if (v2) {
    const named = KEY_ID.test(v2[1].toLowerCase()) ? ring.byId(v2[1].toLowerCase()) : undefined;
    if (!named)
      throw new ConnectionStringCryptoError(
        'cannot be decrypted (written with a key that is neither CONNECTION_ENCRYPTION_KEY nor one of CONNECTION_ENCRYPTION_KEY_PREVIOUS)',
      );
    candidates = [named];
    [, , ivHex, tagHex, dataHex] = v2;
  } else if (v1) {
    candidates = ring.all;
    [, ivHex, tagHex, dataHex] = v1;
  } else throw new ConnectionStringCryptoError('malformed encrypted value');
  for (const key of candidates) {
    try {
      const decipher = createDecipheriv(ALGORITHM, aesKey(key.bytes, purpose), Buffer.from(ivHex, 'hex'), {
        authTagLength: TAG_BYTES,
      });
      decipher.setAuthTag(Buffer.from(tagHex, 'hex'));
      return Buffer.concat([decipher.update(Buffer.from(dataHex, 'hex')), decipher.final()]).toString('utf8');
    } catch {
      // the next accepted key, if any
    }
  }
  throw new ConnectionStringCryptoError(
    'cannot be decrypted (wrong CONNECTION_ENCRYPTION_KEY or tampered value)',
  );
}

/** The id of a 32-byte key given as text (hex or base64), for the CLI's messages. */
export function connectionKeyId(key: string | Buffer): string {
  return keyIdOf(masterKey(key));
}
