import { errorMessage } from '../common/errors/error-message';
import { CanActivate, ExecutionContext, Injectable, Logger } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { CacheService } from '../cache/cache.service';
import { CACHE_TTL } from '../cache/cache-keys';
import { routePolicy } from '../common/http/route-policy';
import { AppError, AuthorizationError } from '../common/errors/app-error';
import { setLogContext } from '../common/logging';
import type { AuthUser } from '../common/request-context';
import type { TicketClaims } from '../common/decorators/context.decorators';
import { describeDatabaseError } from '../database/dialect/driver-errors';
import { hasPermission } from '../profile/access/permissions';
import { RevocationService } from './revocation.service';
import { TOKEN_CLOCK_TOLERANCE_S, TokenService } from './token.service';
import { isUserState, UserState, userStateOf } from './user-state';
import { UsersRepository } from './users.repository';

/** Logged once when token-state lookups start failing (the first request of an outage). */
export const TOKEN_STATE_UNAVAILABLE_EVENT = 'auth.token_state.unavailable';
/** Logged once when a lookup succeeds again, with the count of requests refused meanwhile. */
export const TOKEN_STATE_RECOVERED_EVENT = 'auth.token_state.recovered';

/** A token's revocation and its user's state, as the guard checks them. */
type TokenState = { revoked: true; state: undefined } | { revoked: false; state: UserState };

/** Synchronous reads of token state: the in-process store only, never Redis's local tier. */
const STORE_ONLY = { tier: false } as const;

const BEARER = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*)$/;

function bearerOf(request: FastifyRequest): string {
  const header = request.headers.authorization;
  const match = typeof header === 'string' ? BEARER.exec(header.trim()) : null;
  if (!match) throw new AppError('UNAUTHORIZED', 'Authentication required');
  return match[1];
}

/** A redeemed ticket's claims (D55): the originating token's, whose expiry still applies. */
function ticketClaims(ticket: TicketClaims, nowMs = Date.now()): TicketClaims {
  if (nowMs / 1000 >= ticket.exp + TOKEN_CLOCK_TOLERANCE_S) throw new AppError('TOKEN_EXPIRED', 'Token has expired');
  return ticket;
}

/** The checks on a token's state; the user with the role's current permissions. */
function admitted(claims: AuthUser, issuedAtMs: number, { revoked, state }: TokenState): AuthUser {
  if (revoked) throw new AppError('TOKEN_REVOKED', 'Token has been revoked');
  if (!state.active) throw new AppError('TOKEN_INVALID', 'User is not active');
  // D46: every token of the user issued before this instant was revoked (a password change).
  if (state.notBefore !== null && issuedAtMs < state.notBefore) {
    throw new AppError('TOKEN_REVOKED', 'Token has been revoked');
  }
  // The role claims of the token are information only: what counts is the role's current state.
  return { ...claims, roleId: state.roleId, roles: state.roleCodes, permissions: state.permissions };
}

/**
 * Second step of every protected route (spec §5.5-5.6, D13-D14, D46), after TenantGuard: signature
 * and expiry, tenant of token = tenant of header, revocation of the token, user still active, no
 * revocation of the user's tokens issued before it, then the route's permission against the
 * permissions the user's role has now (the token's copy is information only). Default-deny: every
 * route not marked @Public() goes through here.
 */
@Injectable()
export class JwtAuthGuard implements CanActivate {
  private readonly logger = new Logger('Auth');
  /** Requests refused with DATABASE_UNAVAILABLE since the database last answered a lookup. */
  private failedLookups = 0;

  constructor(
    private readonly tokens: TokenService,
    private readonly users: UsersRepository,
    private readonly cache: CacheService,
    private readonly revocations: RevocationService,
  ) {}

  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    const policy = routePolicy(context);
    if (policy.isPublic) return true;
    const request = context.switchToHttp().getRequest<FastifyRequest>();

    const { issuedAtMs, ...claims } = request.changeTicket
      ? ticketClaims(request.changeTicket)
      : this.tokens.verify(bearerOf(request));

    if (!request.tenant || claims.tenantId !== request.tenant.id) {
      throw new AuthorizationError('Token belongs to another tenant', 'TENANT_MISMATCH');
    }
    // Token and user state held in memory are checked without a promise; else they are read.
    const held = this.heldTokenState(claims);
    if (held) return this.admit(request, policy.permission, claims, issuedAtMs, held);
    return this.tokenState(claims).then((known) =>
      this.admit(request, policy.permission, claims, issuedAtMs, known),
    );
  }

  /** The checks on the token's state, then the route's permission; the user is the request's. */
  private admit(
    request: FastifyRequest,
    required: string | undefined,
    claims: AuthUser,
    issuedAtMs: number,
    known: TokenState,
  ): true {
    const user = admitted(claims, issuedAtMs, known);
    if (required && !hasPermission(user.permissions, required)) {
      throw new AuthorizationError(`Permission ${required} required`);
    }
    request.user = user;
    request.tokenIssuedAtMs = issuedAtMs;
    setLogContext(request, { userId: user.userId });
    return true;
  }

  /**
   * The user a request with these claims would be admitted as now (revocation of the token and of
   * the user's tokens, the user still active, the role's current permissions), or the guard's
   * error: for what outlives its request, such as a live change stream (D55).
   */
  async recheck(claims: AuthUser, issuedAtMs: number): Promise<AuthUser> {
    return admitted(claims, issuedAtMs, this.heldTokenState(claims) ?? (await this.tokenState(claims)));
  }

  /**
   * The token's state when the in-process store (the embedded default's cache) holds both parts —
   * the revocation flag and the user's state — without a promise; undefined when a read is needed
   * (tokenState). Never Redis's local tier: with Redis, both are read from Redis or the database on
   * every request, as tokenState does, so an outage fails closed (D46).
   */
  private heldTokenState(claims: AuthUser): TokenState | undefined {
    const revoked = this.cache.peekShared<unknown>(this.cache.keys.revokedToken(claims.jti), STORE_ONLY);
    // Known to be revoked: refused without asking anything else, as tokenState does.
    if (revoked === true) return { revoked: true, state: undefined };
    if (revoked !== false) return undefined;
    const state = this.cache.peekShared<unknown>(
      this.cache.keys.userState(claims.tenantId, claims.userId),
      STORE_ONLY,
    );
    return isUserState(state) ? { revoked: false, state } : undefined;
  }

  /**
   * The token's revocation state and the user's state, in one cache round trip. A miss (or a cache
   * failure, which reads as misses) asks the database, which is the record. When the database
   * cannot answer either, nobody can say whether the token is still good: 503
   * DATABASE_UNAVAILABLE, never an accepted token (fail closed).
   */
  private async tokenState(claims: AuthUser): Promise<TokenState> {
    const stateKey = this.cache.keys.userState(claims.tenantId, claims.userId);
    const [cachedRevoked, cachedState] = await this.cache.getManyShared<unknown>([
      this.cache.keys.revokedToken(claims.jti),
      stateKey,
    ]);
    // Known to be revoked: refused without asking anything else, also while the database is down.
    if (cachedRevoked === true) return { revoked: true, state: undefined };
    const knownRevoked = typeof cachedRevoked === 'boolean' ? cachedRevoked : undefined;
    const knownState = isUserState(cachedState) ? cachedState : undefined;
    try {
      const [revoked, state] = await Promise.all([
        knownRevoked ?? this.revocations.isTokenRevoked(claims),
        knownState ?? this.loadUserState(stateKey, claims.tenantId, claims.userId),
      ]);
      const askedDatabase = knownRevoked === undefined || knownState === undefined;
      if (askedDatabase && this.failedLookups > 0) this.lookupsRecovered();
      return revoked ? { revoked, state: undefined } : { revoked, state };
    } catch (err) {
      this.lookupFailed(claims, err);
      throw new AppError(
        'DATABASE_UNAVAILABLE',
        'The token cannot be checked right now; try again',
        null,
        {},
        { 'Retry-After': '5' },
      );
    }
  }

  /**
   * The first failed lookup of an outage is logged at error level with its cause; the others are
   * only counted, so that an outage does not write a line per request.
   */
  private lookupFailed(claims: AuthUser, err: unknown): void {
    if (this.failedLookups++ > 0) return;
    const db = describeDatabaseError(err);
    const code = db?.code ?? (err as { code?: unknown } | null)?.code;
    this.logger.error(
      {
        event: TOKEN_STATE_UNAVAILABLE_EVENT,
        category: 'database',
        tenantId: claims.tenantId,
        userId: claims.userId,
        code: typeof code === 'string' || typeof code === 'number' ? String(code) : undefined,
        // A driver's message has the statement's values masked; a refused connection's has none.
        message: db?.message ?? errorMessage(err),
      },
      'Token state cannot be read from the database: answering 503 DATABASE_UNAVAILABLE where the cache cannot say',
    );
  }

  private lookupsRecovered(): void {
    const failedRequests = this.failedLookups;
    this.failedLookups = 0;
    this.logger.log(
      { event: TOKEN_STATE_RECOVERED_EVENT, category: 'database', failedRequests },
      `Token state readable from the database again after ${failedRequests} failed request${failedRequests === 1 ? '' : 's'}`,
    );
  }

  /**
   * Cached for CACHE_TTL.userState seconds: a deactivated user is locked out, and a changed role is
   * enforced, within that time at worst. The entity write path drops the entry on every users write,
   * RoleChangeSubscriber drops the tenant's entries on every roles write, and revokeUserTokens drops
   * it too.
   */
  private async loadUserState(key: string, tenantId: string, userId: number): Promise<UserState> {
    const [record, notBefore] = await Promise.all([
      this.users.findById(tenantId, userId),
      this.revocations.userNotBefore(tenantId, userId),
    ]);
    const state = userStateOf(record, notBefore);
    await this.cache.setJson(key, state, CACHE_TTL.userState);
    return state;
  }
}
