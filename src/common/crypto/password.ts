import * as argon2 from 'argon2';
import bcrypt from 'bcryptjs';

/** argon2id for every new hash (D12). */
export async function hashPassword(plain: string): Promise<string> {
  return argon2.hash(plain, { type: argon2.argon2id });
}

const BCRYPT = /^\$2[aby]\$\d{2}\$/;

export interface PasswordCheck {
  ok: boolean;
  /** The stored hash is of an older scheme (bcrypt) and should be replaced after a success. */
  needsRehash: boolean;
}

/**
 * Verifies a password against argon2 or (legacy) bcrypt hashes (D12). A missing or unreadable hash
 * still costs one argon2 verification, so failures take about the same time whatever the cause.
 */
export async function verifyPassword(
  stored: string | null | undefined,
  plain: string,
): Promise<PasswordCheck> {
  if (stored && BCRYPT.test(stored)) {
    const ok = await bcrypt.compare(plain, stored);
    return { ok, needsRehash: ok };
  }
  if (stored && stored.startsWith('$argon2')) {
    try {
      const ok = await argon2.verify(stored, plain);
      return { ok, needsRehash: ok && (!stored.startsWith('$argon2id$') || argon2.needsRehash(stored)) };
    } catch {
      return { ok: false, needsRehash: false };
    }
  }
  await burnVerification(plain);
  return { ok: false, needsRehash: false };
}

let dummyHash: Promise<string> | undefined;

/** One argon2 verification against a throw-away hash: the cost of checking an unknown user. */
export async function burnVerification(plain: string): Promise<void> {
  dummyHash ??= argon2.hash('dummy-password-for-equal-time', { type: argon2.argon2id });
  await argon2.verify(await dummyHash, plain).catch(() => false);
}
