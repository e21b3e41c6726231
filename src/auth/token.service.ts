import { Injectable } from '@nestjs/common';
import { JwtService } from '@nestjs/jwt';
import { randomUUID } from 'node:crypto';
import { AppError } from '../common/errors/app-error';
import type { AuthUser } from '../common/request-context';
import type { AppConfig } from '../config/config.schema';
import { parseDurationSeconds } from '../config/config.schema';
import { InjectConfig } from '../config/inject-config.decorator';
import type { UserRecord } from './users.repository';

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
  exp: number;
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

  constructor(
    private readonly jwt: JwtService,
    @InjectConfig() config: AppConfig,
  ) {
    this.lifetimeS = parseDurationSeconds(config.auth.jwtExpiresIn) ?? 86400;
  }

  issue(user: UserRecord): IssuedToken {
    const now = Math.floor(Date.now() / 1000);
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
      exp,
    };
    return {
      token: this.jwt.sign(payload),
      jti,
      expiresIn: this.lifetimeS,
      expiresAt: new Date(exp * 1000).toISOString(),
    };
  }

  /** Signature (HS256 only), expiry (required) and payload shape; throws 401 codes of D18. */
  verify(token: string): AuthUser {
    let payload: Partial<TokenPayload>;
    try {
      payload = this.jwt.verify<TokenPayload>(token);
    } catch (err) {
      if (err instanceof Error && err.name === 'TokenExpiredError') {
        throw new AppError('TOKEN_EXPIRED', 'Token has expired');
      }
      throw new AppError('TOKEN_INVALID', 'Token is invalid');
    }
    const userId = Number(payload.user_id ?? payload.sub);
    if (
      typeof payload.exp !== 'number' ||
      typeof payload.jti !== 'string' ||
      typeof payload.tenant_id !== 'string' ||
      !Number.isInteger(userId) ||
      userId <= 0
    ) {
      throw new AppError('TOKEN_INVALID', 'Token is invalid');
    }
    return {
      userId,
      email: String(payload.email ?? ''),
      tenantId: payload.tenant_id,
      roleId: typeof payload.role_id === 'number' ? payload.role_id : null,
      roles: Array.isArray(payload.roles) ? payload.roles.map(String) : [],
      permissions: Array.isArray(payload.permissions) ? payload.permissions.map(String) : [],
      jti: payload.jti,
      exp: payload.exp,
    };
  }
}
