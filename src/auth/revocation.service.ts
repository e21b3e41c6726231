import { errorMessage } from '../common/errors/error-message';
import { Injectable, Logger } from '@nestjs/common';
import type { QueryRunner } from 'typeorm';
import { CacheService } from '../cache/cache.service';
import { CACHE_TTL } from '../cache/cache-keys';
import { AppError } from '../common/errors/app-error';
import type { AuthUser } from '../common/request-context';
import { RevocationsRepository } from './revocations.repository';
import { TOKEN_CLOCK_TOLERANCE_S, TokenService } from './token.service';
import { isDatabaseUnavailableError } from '../database/dialect/driver-errors';

/** Defined beside the token checks that use it; exported here too for the module's options. */
export { TOKEN_CLOCK_TOLERANCE_S };

/**
 * Token revocation (D14, D46). The configuration database is the record (app_revoked_tokens, kept
 * until the revoked tokens expire); the cache stands in front of it:
 *  - `revokedToken(jti)` holds true (revoked, until exp) or false (not revoked, CACHE_TTL
 *    .tokenNotRevoked seconds). Logout writes true after its row, which overwrites a cached false.
 *  - a user's `notBefore` (tokens issued earlier are refused) is part of the user state that
 *    JwtAuthGuard caches for CACHE_TTL.userState seconds.
 */
@Injectable()
export class RevocationService {
  private readonly logger = new Logger('Revocation');

  constructor(
    private readonly revocations: RevocationsRepository,
    private readonly cache: CacheService,
    private readonly tokens: TokenService,
  ) {}

  /**
   * Logout: revokes one token until its exp. The row is written first; a database failure is
   * `503 DATABASE_UNAVAILABLE` (unreachable) or `500 SERVICE_ERROR`, so nobody is told a token is
   * revoked when it is not. A failed cache write
   * after that is only a warning: the guard falls back to the database on a cache miss.
   */
  async revokeToken(user: AuthUser, nowMs = Date.now()): Promise<void> {
    try {
      await this.revocations.insert({
        tenantId: user.tenantId,
        userId: user.userId,
        jti: user.jti,
        notBeforeMs: null,
        expiresAtMs: (user.exp + TOKEN_CLOCK_TOLERANCE_S) * 1000,
        createdAtMs: nowMs,
      });
    } catch (err) {
      // A concurrent logout of the same token won the unique index: it is revoked all the same.
      if (!(await this.revocations.isTokenRevoked(user.tenantId, user.jti).catch(() => false))) {
        this.logger.error(
          { tenantId: user.tenantId, userId: user.userId, err: errorMessage(err) },
          'Revocation could not be stored',
        );
        // An unreachable database is the outage answer (503 with Retry-After), not an internal error.
        if (isDatabaseUnavailableError(err))
          throw new AppError(
            'DATABASE_UNAVAILABLE',
            'Logout could not be recorded; try again later',
            null,
            {},
            {
              'Retry-After': '5',
            },
          );
        throw new AppError('SERVICE_ERROR', 'Logout could not be recorded; try again');
      }
    }
    const ttl = Math.max(1, user.exp + TOKEN_CLOCK_TOLERANCE_S - Math.floor(nowMs / 1000));
    await this.cache.setJson(this.cache.keys.revokedToken(user.jti), true, ttl);
  }

  /**
   * Revokes every token of the user issued before `atMs` (epoch ms), e.g. on a password change: a
   * user-wide row (jti NULL, not_before = atMs) kept for one token lifetime. With `queryRunner`
   * (of the configuration database) the row is written inside the caller's transaction, and the
   * caller must drop the user's cached state (`CacheKeys.userState`) again after COMMIT, as the
   * entity write path does for every users write (a request in between may have cached the state
   * without the uncommitted row); without one the row is committed at once and dropping the cached
   * state here suffices. Throws when the row cannot be written.
   */
  async revokeUserTokens(
    tenantId: string,
    userId: number,
    atMs: number,
    queryRunner?: QueryRunner,
  ): Promise<void> {
    await this.revocations.insert(
      {
        tenantId,
        userId,
        jti: null,
        notBeforeMs: atMs,
        expiresAtMs: atMs + (this.tokens.lifetimeS + TOKEN_CLOCK_TOLERANCE_S) * 1000,
        createdAtMs: Date.now(),
      },
      queryRunner,
    );
    this.logger.log(
      { event: 'user_tokens_revoked', tenantId, userId, notBefore: atMs },
      'user_tokens_revoked',
    );
    await this.cache.delete([this.cache.keys.userState(tenantId, userId)]);
  }

  /**
   * Whether a token is revoked, from the database; the answer is cached (true until the token's
   * exp, false for CACHE_TTL.tokenNotRevoked seconds, never past exp).
   */
  async isTokenRevoked(user: AuthUser, nowMs = Date.now()): Promise<boolean> {
    const revoked = await this.revocations.isTokenRevoked(user.tenantId, user.jti);
    const left = user.exp + TOKEN_CLOCK_TOLERANCE_S - Math.floor(nowMs / 1000);
    const ttl = revoked ? left : Math.min(CACHE_TTL.tokenNotRevoked, left);
    if (ttl > 0) await this.cache.setJson(this.cache.keys.revokedToken(user.jti), revoked, ttl);
    return revoked;
  }

  /** Epoch ms before which the user's tokens are refused, or null: part of the cached user state. */
  async userNotBefore(tenantId: string, userId: number): Promise<number | null> {
    return this.revocations.userNotBefore(tenantId, userId);
  }

  /** Deletes the rows whose tokens have all expired. */
  async purgeExpired(nowMs = Date.now()): Promise<number | undefined> {
    return this.revocations.purgeExpired(nowMs);
  }
}
