import { Injectable } from '@nestjs/common';
import { JwtService } from '@nestjs/jwt';
import { LRUCache } from 'lru-cache';
import { createSecretKey, randomUUID, type KeyObject } from 'node:crypto';
import { AppError } from '../common/errors/app-error';
import type { AuthUser } from '../common/request-context';
import type { AppConfig } from '../config/config.schema';
import { parseDurationSeconds } from '../config/config.schema';
import { InjectConfig } from '../config/inject-config.decorator';
import { jwtKeyRing, KEY_ID, type KeyRing } from '../config/key-ring';
import type { UserRecord } from './users.repository';

/**
 * Seconds of clock leeway (the JwtModule's clockTolerance): a token is accepted that much past its
 * `exp`, with an `iat` that much in the future, and a revocation row is kept that much longer than
 * the tokens it refuses.
 */
export const TOKEN_CLOCK_TOLERANCE_S = 5;

/** D13: both payload variants of spec §2.14 in one token. */
export interface TokenPayload {
  sub: string;
  user_id: number;
  email: string;
  tenant_id: string;
  tennr: string;
  role_id: number | null;
  roles: string[];
  permissions: string[];
  jti: string;
  iat: number;
  /**
   * Issue time in epoch milliseconds (D46), with floor(iat_ms / 1000) === iat. `iat` is in whole
   * seconds and cannot order a token against a password change in the same second.
   */
  iat_ms: number;
  exp: number;
}

/** A verified token: the request's user plus what only the guard needs. */
export interface VerifiedToken extends AuthUser {
  /** `iat_ms`, or `iat` × 1000 for a token without it (issued before the claim existed). */
  issuedAtMs: number;
}

export interface IssuedToken {
  token: string;
  jti: string;
  expiresIn: number;
  expiresAt: string;
}

/**
 * Issues and verifies HS256 tokens through @nestjs/jwt. The module is given the secret as a
 * KeyObject (JwtModule options in AuthModule): with a string secret jsonwebtoken first tries
 * createPublicKey on every verification, which costs ~50× more.
 */
@Injectable()
export class TokenService {
  readonly lifetimeS: number;
  /**
   * Tokens that verified, with their claims: HS256 verification and the claim checks cost ~20 µs,
   * a tenth of a cached read, and give the same answer for the same text every time — except
   * expiry, which is checked again on every use. Revocation is not decided here (JwtAuthGuard asks
   * on every request). Only tokens that verified are kept, so garbage cannot fill it.
   */
  private readonly verified = new LRUCache<string, Readonly<VerifiedToken>>({ max: 10_000 });

  /** D57: JWT_SECRET signs (its id in the header's `kid`); JWT_SECRET_PREVIOUS still verifies. */
  private readonly keys: KeyRing;
  private readonly keyObjects: Map<string, KeyObject>;

  constructor(
    private readonly jwt: JwtService,
    @InjectConfig() config: AppConfig,
  ) {
    this.lifetimeS = parseDurationSeconds(config.auth.jwtExpiresIn) ?? 86400;
    this.keys = jwtKeyRing(config.auth);
    this.keyObjects = new Map(this.keys.all.map((k) => [k.id, createSecretKey(k.bytes)]));
  }

  issue(user: UserRecord): IssuedToken {
    const nowMs = Date.now();
    const now = Math.floor(nowMs / 1000);
    const jti = randomUUID();
    const exp = now + this.lifetimeS;
    const payload: TokenPayload = {
      sub: String(user.id),
      user_id: user.id,
      email: user.email,
      tenant_id: user.tenantId,
      tennr: user.tenantId,
      role_id: user.roleId,
      roles: user.roleCode ? [user.roleCode] : [],
      permissions: user.permissions,
      jti,
      iat: now,
      iat_ms: nowMs,
      exp,
    };
    return {
      token: this.jwt.sign(payload, { keyid: this.keys.current.id }),
      jti,
      expiresIn: this.lifetimeS,
      expiresAt: new Date(exp * 1000).toISOString(),
    };
  }

  /**
   * Signature (HS256 only), expiry (required) and the claims' shape and consistency; throws the 401
   * codes of D18. Only tokens this service could have issued pass: `iat` required and not in the
   * future, a lifetime no longer than JWT_EXPIRES_IN, the duplicate claims of D13 agreeing with each
   * other. The role claims (`role_id`, `roles`, `permissions`) are checked for shape only: they are
   * information, JwtAuthGuard enforces the role's current permissions.
   */
  verify(token: string, nowMs = Date.now()): VerifiedToken {
    // A token verified before: its signature and claims cannot have changed, only time has passed.
    const known = this.verified.get(token);
    if (known !== undefined) {
      const now = Math.floor(nowMs / 1000);
      if (now >= known.exp + TOKEN_CLOCK_TOLERANCE_S) {
        this.verified.delete(token);
        throw new AppError('TOKEN_EXPIRED', 'Token has expired');
      }
      if (known.issuedAtMs > (now + TOKEN_CLOCK_TOLERANCE_S) * 1000 + 999) {
        throw new AppError('TOKEN_INVALID', 'Token is invalid');
      }
      return known;
    }
    const verified = this.verifyUncached(token, nowMs);
    this.verified.set(token, Object.freeze(verified));
    return verified;
  }

  /**
   * The keys to verify `token` with (D57): the one its header's `kid` names (an unknown id: none, so
   * the token is invalid), or, for a token without one (issued before key ids), every accepted key.
   */
  private keysFor(token: string): KeyObject[] {
    let kid: unknown;
    try {
      kid = (JSON.parse(Buffer.from(token.split('.', 1)[0], 'base64url').toString('utf8')) as { kid?: unknown })
        ?.kid;
    } catch {
      kid = undefined; // not a JWT header: jsonwebtoken refuses it below
    }
    if (kid === undefined) return [...this.keyObjects.values()];
    const key = typeof kid === 'string' && KEY_ID.test(kid) ? this.keyObjects.get(kid) : undefined;
    return key ? [key] : [];
  }

  private verifyUncached(token: string, nowMs: number): VerifiedToken {
    let payload: Partial<TokenPayload> | undefined;
    for (const key of this.keysFor(token)) {
      try {
        // jsonwebtoken takes a KeyObject (fast, see the class comment); the option's type says
        // string | Buffer only.
        payload = this.jwt.verify<TokenPayload>(token, { secret: key as unknown as Buffer });
        break;
      } catch (err) {
        // Expiry is checked after the signature: this key was the right one.
        if (err instanceof Error && err.name === 'TokenExpiredError') {
          throw new AppError('TOKEN_EXPIRED', 'Token has expired');
        }
      }
    }
    if (payload === undefined) throw new AppError('TOKEN_INVALID', 'Token is invalid');
    const userId = userIdOf(payload);
    if (
      userId === undefined ||
      !Number.isSafeInteger(payload.exp) ||
      !Number.isSafeInteger(payload.iat) ||
      typeof payload.jti !== 'string' ||
      payload.jti === '' ||
      typeof payload.tenant_id !== 'string' ||
      (payload.tennr !== undefined && payload.tennr !== payload.tenant_id) ||
      (payload.iat_ms !== undefined && !issuedAtMsConsistent(payload.iat_ms, payload.iat)) ||
      (payload.role_id !== undefined && payload.role_id !== null && !Number.isSafeInteger(payload.role_id)) ||
      (payload.roles !== undefined && !isStringArray(payload.roles)) ||
      (payload.permissions !== undefined && !isStringArray(payload.permissions))
    ) {
      throw new AppError('TOKEN_INVALID', 'Token is invalid');
    }
    const iat = payload.iat as number;
    const exp = payload.exp as number;
    // Issued in the future (beyond the clock leeway), or valid for longer than this service issues.
    if (
      iat > Math.floor(nowMs / 1000) + TOKEN_CLOCK_TOLERANCE_S ||
      exp - iat > this.lifetimeS + TOKEN_CLOCK_TOLERANCE_S
    ) {
      throw new AppError('TOKEN_INVALID', 'Token is invalid');
    }
    return {
      issuedAtMs: payload.iat_ms ?? iat * 1000,
      userId,
      email: typeof payload.email === 'string' ? payload.email : '',
      tenantId: payload.tenant_id,
      roleId: payload.role_id ?? null,
      roles: payload.roles ?? [],
      permissions: payload.permissions ?? [],
      jti: payload.jti,
      exp,
    };
  }
}

/**
 * The user id of `user_id` and `sub` (D13 carries both): a positive safe integer, and `sub` its
 * decimal text. Either alone is enough; when both are present they must agree. Undefined if not.
 */
function userIdOf(payload: Partial<TokenPayload>): number | undefined {
  const { user_id: userId, sub } = payload;
  if (userId === undefined && sub === undefined) return undefined;
  if (userId !== undefined && (!Number.isSafeInteger(userId) || userId <= 0)) return undefined;
  if (sub !== undefined) {
    if (typeof sub !== 'string' || !/^[1-9][0-9]*$/.test(sub)) return undefined;
    if (userId !== undefined && sub !== String(userId)) return undefined;
  }
  const id = userId ?? Number(sub);
  return Number.isSafeInteger(id) ? id : undefined;
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((v) => typeof v === 'string');
}

/** iat_ms must be a whole number of ms within the second that `iat` names. */
function issuedAtMsConsistent(iatMs: unknown, iat: unknown): boolean {
  return (
    typeof iatMs === 'number' &&
    Number.isSafeInteger(iatMs) &&
    iatMs >= 0 &&
    typeof iat === 'number' &&
    Math.floor(iatMs / 1000) === iat
  );
}
