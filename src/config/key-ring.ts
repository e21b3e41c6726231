import { createHash } from 'node:crypto';
import { decodeKey32 } from './parse';

/**
 * Key rotation (D57): a current key that signs or encrypts, and previous keys still accepted to
 * verify or decrypt. Every key has an id, the first 8 hex characters of the SHA-256 of its bytes
 * (the 32 decoded bytes of an encryption key, the UTF-8 bytes of a JWT secret), written next to
 * what it protects so the right key is picked without trying them all.
 */
export interface RingKey {
  readonly id: string;
  readonly bytes: Buffer;
}

export interface KeyRing {
  /** Signs and encrypts. */
  readonly current: RingKey;
  /** Current first, then the previous keys in the order configured; no id twice. */
  readonly all: readonly RingKey[];
  /** The key with this id, or undefined (an unknown id fails like a wrong key). */
  byId(id: string): RingKey | undefined;
}

export function keyIdOf(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex').slice(0, 8);
}

export const KEY_ID = /^[0-9a-f]{8}$/;

export function ringKey(bytes: Buffer): RingKey {
  return Object.freeze({ id: keyIdOf(bytes), bytes });
}

export function keyRing(current: Buffer, previous: readonly Buffer[] = []): KeyRing {
  const byId = new Map<string, RingKey>();
  for (const bytes of [current, ...previous]) {
    const key = ringKey(bytes);
    if (!byId.has(key.id)) byId.set(key.id, key);
  }
  const all = Object.freeze([...byId.values()]);
  return Object.freeze({ current: all[0], all, byId: (id: string) => byId.get(id) });
}

/** A comma list of keys (the *_PREVIOUS variables); blanks dropped. */
export function splitKeyList(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** Decodes a 32-byte key (hex or base64); the configuration has already checked it. */
function key32(value: string, name: string): Buffer {
  const bytes = decodeKey32(value);
  if (!bytes) throw new Error(`${name}: must be 32 bytes as 64 hex characters or base64`);
  return bytes;
}

/** The tenant header's keys: TENANT_ENCRYPTION_KEY, then TENANT_ENCRYPTION_KEY_PREVIOUS. */
export function tenantKeyRing(crypto: {
  tenantEncryptionKey: string;
  tenantEncryptionKeysPrevious?: string[];
}): KeyRing {
  return keyRing(
    key32(crypto.tenantEncryptionKey, 'TENANT_ENCRYPTION_KEY'),
    (crypto.tenantEncryptionKeysPrevious ?? []).map((k) => key32(k, 'TENANT_ENCRYPTION_KEY_PREVIOUS')),
  );
}

/** Stored secrets' keys: CONNECTION_ENCRYPTION_KEY, then CONNECTION_ENCRYPTION_KEY_PREVIOUS. */
export function storedSecretKeyRing(crypto: {
  connectionEncryptionKey: string;
  connectionEncryptionKeysPrevious?: string[];
}): KeyRing {
  return keyRing(
    key32(crypto.connectionEncryptionKey, 'CONNECTION_ENCRYPTION_KEY'),
    (crypto.connectionEncryptionKeysPrevious ?? []).map((k) =>
      key32(k, 'CONNECTION_ENCRYPTION_KEY_PREVIOUS'),
    ),
  );
}

/** The JWT secrets (their UTF-8 bytes): JWT_SECRET, then JWT_SECRET_PREVIOUS. */
export function jwtKeyRing(auth: { jwtSecret: string; jwtSecretsPrevious?: string[] }): KeyRing {
  return keyRing(
    Buffer.from(auth.jwtSecret, 'utf8'),
    (auth.jwtSecretsPrevious ?? []).map((s) => Buffer.from(s, 'utf8')),
  );
}
