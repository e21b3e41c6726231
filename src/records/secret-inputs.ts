import { hashPassword } from '../common/crypto/password';
import type { EntityInfo } from '../registry/registry.types';

/**
 * A write-only input: a body key that is not a registry field, whose value is transformed and stored
 * in a hidden field's column and never returned (the password of `users`, stored as its argon2id
 * hash, D12). Declared per entity code here rather than in the registry payload, so that a registry
 * row can never turn a hidden column into a writable one; the target must still be a hidden field of
 * the entity's registry for the input to be accepted.
 */
export interface SecretInput {
  /** The body key, e.g. `password`. */
  input: string;
  /** The hidden registry field whose column receives the transformed value. */
  field: string;
  minLength: number;
  maxLength: number;
  transform(plain: string): Promise<string>;
  /** A new value ends the sessions of the record's user (a password, D46). */
  revokesTokens?: boolean;
}

const SECRET_INPUTS: Readonly<Record<string, readonly SecretInput[]>> = {
  users: [
    {
      input: 'password',
      field: 'password_hash',
      minLength: 8,
      maxLength: 1024,
      transform: hashPassword,
      revokesTokens: true,
    },
  ],
};

/** The write-only inputs the entity accepts (its target field exists and is hidden). */
export function secretInputsOf(entity: EntityInfo): SecretInput[] {
  return (SECRET_INPUTS[entity.code] ?? []).filter(
    (s) => entity.fields.find((f) => f.name === s.field)?.hidden === true,
  );
}
