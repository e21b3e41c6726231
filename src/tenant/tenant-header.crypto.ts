import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { decodeKey32 } from '../config/config.schema';
import { KEY_ID, keyIdOf, keyRing, type KeyRing } from '../config/key-ring';

/**
 * The x-tenant-id header (spec §2.11, D5): JSON `{ciphertext, nonce, salt, authTag, algorithm}`,
 * AES-256-GCM under a key derived per header with HKDF-SHA256(ikm = TENANT_ENCRYPTION_KEY,
 * salt = header salt, info = "x-tenant-id"). Shared by the TenantGuard, the CLI and the proxy.
 * `kid` (D57) names the key it was made with; a header without one (made before key ids) is tried
 * against every accepted key, current first.
 */
export const TENANT_HEADER_ALGORITHM = 'aes-256-gcm';
const HKDF_INFO = Buffer.from('x-tenant-id');
const NONCE_BYTES = 16;
const SALT_BYTES = 16;
const TAG_BYTES = 16;

export interface TenantHeaderValue {
  ciphertext: string;
  nonce: string;
  salt: string;
  authTag: string;
  algorithm: typeof TENANT_HEADER_ALGORITHM;
  kid?: string;
}

export interface TenantPayload {
  type: 'tenant';
  id: string;
  timestamp?: number;
}

/** Why a header was refused; the guard maps each to the spec §7 body. */
export type TenantHeaderFailure = 'required' | 'invalid_format_not_encrypted' | 'decryption_failed';

export class TenantHeaderError extends Error {
  constructor(readonly reason: TenantHeaderFailure) {
    super(reason);
  }
}

function deriveKey(masterKey: Buffer, salt: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', masterKey, salt, HKDF_INFO, 32));
}

function masterKeyOf(key: string | Buffer): Buffer {
  const buf = Buffer.isBuffer(key) ? key : decodeKey32(key);
  if (!buf || buf.length !== 32) throw new TenantHeaderError('decryption_failed');
  return buf;
}

/** Key ids of the keys seen: the proxy encrypts every header with one key. */
const kids = new Map<string, string>();
function kidOf(master: Buffer): string {
  const hex = master.toString('hex');
  let id = kids.get(hex);
  if (id === undefined) {
    id = keyIdOf(master);
    if (kids.size < 16) kids.set(hex, id);
  }
  return id;
}

function ringOf(keys: string | Buffer | KeyRing): KeyRing {
  return typeof keys === 'string' || Buffer.isBuffer(keys) ? keyRing(masterKeyOf(keys)) : keys;
}

/** Builds a header value for a tenant id (the proxy's half, D7). */
export function encryptTenantHeader(
  tenantId: string | number,
  key: string | Buffer,
  timestamp?: number,
): string {
  const id = String(tenantId).trim();
  if (!/^\d+$/.test(id)) throw new Error(`Tenant id must be digits (got "${id}")`);
  const salt = randomBytes(SALT_BYTES);
  const nonce = randomBytes(NONCE_BYTES);
  const master = masterKeyOf(key);
  const cipher = createCipheriv(TENANT_HEADER_ALGORITHM, deriveKey(master, salt), nonce);
  const payload: TenantPayload = { type: 'tenant', id, ...(timestamp !== undefined ? { timestamp } : {}) };
  const ciphertext = Buffer.concat([cipher.update(JSON.stringify(payload), 'utf8'), cipher.final()]);
  const value: TenantHeaderValue = {
    ciphertext: ciphertext.toString('hex'),
    nonce: nonce.toString('hex'),
    salt: salt.toString('hex'),
    authTag: cipher.getAuthTag().toString('hex'),
    algorithm: TENANT_HEADER_ALGORITHM,
    kid: kidOf(master),
  };
  return JSON.stringify(value);
}

const HEX = /^(?:[0-9a-fA-F]{2})+$/;

function nonEmptyString(v: unknown): v is string {
  return typeof v === 'string' && v.length > 0;
}

/** Step 2 of spec §5.1: JSON with non-empty ciphertext, nonce and salt. */
export function parseTenantHeader(
  raw: string | undefined,
): Partial<TenantHeaderValue> & Pick<TenantHeaderValue, 'ciphertext' | 'nonce' | 'salt'> {
  if (raw === undefined || raw.trim() === '') throw new TenantHeaderError('required');
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new TenantHeaderError('invalid_format_not_encrypted');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new TenantHeaderError('invalid_format_not_encrypted');
  }
  const v = parsed as Record<string, unknown>;
  if (!nonEmptyString(v.ciphertext) || !nonEmptyString(v.nonce) || !nonEmptyString(v.salt)) {
    throw new TenantHeaderError('invalid_format_not_encrypted');
  }
  return v as ReturnType<typeof parseTenantHeader>;
}

/**
 * Decrypts and validates a header (spec §5.1, D5-D6). Returns the payload; throws
 * TenantHeaderError. Every cryptographic or payload problem is `decryption_failed`, so a caller
 * learns nothing about which part was wrong.
 */
export function decryptTenantHeader(raw: string | undefined, keys: string | Buffer | KeyRing): TenantPayload {
  const v = parseTenantHeader(raw);
  const fail = (): never => {
    throw new TenantHeaderError('decryption_failed');
  };
  if (v.algorithm !== undefined && v.algorithm !== TENANT_HEADER_ALGORITHM) fail();
  const ring = ringOf(keys);
  let candidates = ring.all;
  if (v.kid !== undefined) {
    // D57: an unknown key id fails like any header that cannot be decrypted.
    const named = typeof v.kid === 'string' && KEY_ID.test(v.kid) ? ring.byId(v.kid) : undefined;
    candidates = named ? [named] : fail();
  }
  if (!nonEmptyString(v.authTag)) fail();
  const parts = [v.ciphertext, v.nonce, v.salt, v.authTag as string];
  if (!parts.every((p) => HEX.test(p))) fail();
  const nonce = Buffer.from(v.nonce, 'hex');
  const salt = Buffer.from(v.salt, 'hex');
  const tag = Buffer.from(v.authTag as string, 'hex');
  // D5: the tag must be exactly 16 bytes; GCM would otherwise accept truncated tags.
  if (nonce.length !== NONCE_BYTES || salt.length !== SALT_BYTES || tag.length !== TAG_BYTES) fail();
  const ciphertext = Buffer.from(v.ciphertext, 'hex');
  let plaintext: string | undefined;
  for (const key of candidates) {
    try {
      const decipher = createDecipheriv(TENANT_HEADER_ALGORITHM, deriveKey(key.bytes, salt), nonce, {
        authTagLength: TAG_BYTES,
      });
      decipher.setAuthTag(tag);
      plaintext = Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
      break;
    } catch {
      // the next accepted key, if any
    }
  }
  if (plaintext === undefined) return fail();
  let payload: unknown;
  try {
    payload = JSON.parse(plaintext);
  } catch {
    return fail();
  }
  const p = payload as Partial<TenantPayload> | null;
  if (typeof p !== 'object' || p === null || p.type !== 'tenant' || typeof p.id !== 'string') return fail();
  const id = p.id.trim();
  if (!/^\d{1,10}$/.test(id) || Number(id) <= 0 || Number(id) > 2147483647) return fail();
  if (p.timestamp !== undefined && (typeof p.timestamp !== 'number' || !Number.isFinite(p.timestamp)))
    return fail();
  return { type: 'tenant', id, ...(p.timestamp !== undefined ? { timestamp: p.timestamp } : {}) };
}

/** How far in the future a header's timestamp may lie (clock skew between proxy and service). */
export const TENANT_HEADER_MAX_FUTURE_SKEW_S = 60;

/**
 * D6: with maxAgeS set (0 = off), a header whose timestamp is older than maxAgeS is refused, and so
 * is one stamped more than TENANT_HEADER_MAX_FUTURE_SKEW_S in the future, which would otherwise
 * never expire.
 */
export function isHeaderExpired(payload: TenantPayload, maxAgeS: number, nowS = Date.now() / 1000): boolean {
  if (maxAgeS <= 0 || payload.timestamp === undefined) return false;
  const age = nowS - payload.timestamp;
  return age > maxAgeS || age < -TENANT_HEADER_MAX_FUTURE_SKEW_S;
}
