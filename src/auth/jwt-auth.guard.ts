import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { CacheService } from '../cache/cache.service';
import { CACHE_TTL } from '../cache/cache-keys';
import { REQUIRED_PERMISSION } from '../common/decorators/context.decorators';
import { IS_PUBLIC } from '../common/decorators/public.decorator';
import { AppError, AuthorizationError } from '../common/errors/app-error';
import { setLogContext } from '../common/logging';
import { hasPermission } from './permissions';
import { TokenService } from './token.service';
import { UsersRepository } from './users.repository';

const BEARER = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*)$/;

/**
 * Second step of every protected route (spec §5.5-5.6, D13-D14), after TenantGuard: signature and
 * expiry, tenant of token = tenant of header, revocation, user still active, then the route's
 * permission. Default-deny: every route not marked @Public() goes through here.
 */
@Injectable()
export class JwtAuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly tokens: TokenService,
    private readonly users: UsersRepository,
    private readonly cache: CacheService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, targets)) return true;
    const request = context.switchToHttp().getRequest<FastifyRequest>();

    const header = request.headers.authorization;
    const match = typeof header === 'string' ? BEARER.exec(header.trim()) : null;
    if (!match) throw new AppError('UNAUTHORIZED', 'Authentication required');
    const user = this.tokens.verify(match[1]);

    if (!request.tenant || user.tenantId !== request.tenant.id) {
      throw new AuthorizationError('Token belongs to another tenant', 'TENANT_MISMATCH');
    }
    // One cache round trip for both: the token's revocation mark and the user's cached state.
    const stateKey = this.cache.keys.userState(user.tenantId, user.userId);
    const [revoked, cachedActive] = await this.cache.getManyJson<boolean>([
      this.cache.keys.revokedToken(user.jti),
      stateKey,
    ]);
    if (revoked) throw new AppError('TOKEN_REVOKED', 'Token has been revoked');
    if (!(cachedActive ?? (await this.loadUserState(stateKey, user.tenantId, user.userId)))) {
      throw new AppError('TOKEN_INVALID', 'User is not active');
    }

    const required = this.reflector.getAllAndOverride<string | undefined>(REQUIRED_PERMISSION, targets);
    if (required && !hasPermission(user.permissions, required)) {
      throw new AuthorizationError(`Permission ${required} required`);
    }
    request.user = user;
    setLogContext(request.raw, { userId: user.userId });
    return true;
  }

  /** Cached for CACHE_TTL.userState seconds: a deactivated user is locked out within that time. */
  private async loadUserState(key: string, tenantId: string, userId: number): Promise<boolean> {
    const active = (await this.users.findById(tenantId, userId))?.active ?? false;
    await this.cache.setJson(key, active, CACHE_TTL.userState);
    return active;
  }
}
