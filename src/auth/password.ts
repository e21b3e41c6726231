import * as argon2 from 'argon2';

/** argon2id for every new hash (D12). */
export async function hashPassword(plain: string): Promise<string> {
  return argon2.hash(plain, { type: argon2.argon2id });
}
