import { errorMessage } from '../common/errors/error-message';
import { Injectable, Logger } from '@nestjs/common';
import { AppError, NotFoundError } from '../common/errors/app-error';
import { SerializedJson } from '../common/serialized-json';
import type { AuthUser, TenantContext } from '../common/request-context';
import { TenantConfigService, TenantConfigView } from '../tenant/tenant-config.service';
import { TenantLookupService } from '../tenant/tenant-lookup.service';
import type { ProfileDto, SigninDto, SigninResponseDto } from './auth.dto';
import { hashPassword, verifyPassword } from '../common/crypto/password';
import { RevocationService } from './revocation.service';
import { SigninThrottle, type SigninOutcome } from './signin-throttle';
import { TokenService } from './token.service';
import { userStateOf } from './user-state';
import { normaliseEmail, UserRecord, UsersRepository } from './users.repository';

/** Sign-in, logout and profile (spec §4.1, D12-D14). */
@Injectable()
export class AuthService {
  private readonly logger = new Logger('Auth');
  /** tenantConfigJson's texts by tenant row object (weak: they go with the rows). */
  private readonly tenantConfigTexts = new WeakMap<object, SerializedJson>();

  constructor(
    private readonly users: UsersRepository,
    private readonly tokens: TokenService,
    private readonly throttle: SigninThrottle,
    private readonly tenants: TenantLookupService,
    private readonly tenantConfig: TenantConfigService,
    private readonly revocations: RevocationService,
  ) {}

  /**
   * The login-screen view of the tenant (TenantConfigService.view) as JSON text, serialized once per tenant row: the row read from the cache is
   * one shared, frozen object while the cached tenant is unchanged (CacheService.getShared), so
   * its text is kept beside it and a changed tenant (a new row object) is serialized afresh.
   */
  async tenantConfigJson(tenant: TenantContext): Promise<SerializedJson> {
    const row = await this.tenants.findById(tenant.id);
    if (!row) throw new NotFoundError('Tenant not found');
    let json = this.tenantConfigTexts.get(row);
    if (!json) {
      json = new SerializedJson(JSON.stringify(this.tenantConfig.view(row)));
      this.tenantConfigTexts.set(row, json);
    }
    return json;
  }

  /**
   * Rule 3: credentials are checked against the users of the header's tenant only. `clientAddress`
   * is the caller's IP address (request.ip, behind TRUST_PROXY), for the throttle (D46).
   */
  async signin(tenant: TenantContext, dto: SigninDto, clientAddress: string): Promise<SigninResponseDto> {
    const email = normaliseEmail(dto.email_id);
    const attempt = { tenantId: tenant.id, email, address: clientAddress };
    // The slot is taken before the password is verified, so parallel attempts cannot overrun the
    // throttle (D46, issue 21 #3); how the attempt ended is settled whatever the way out.
    await this.throttle.reserve(attempt);
    let outcome: SigninOutcome = 'aborted';
    try {
      const user = await this.users.findByEmail(tenant.id, email);
      // verifyPassword costs one hash verification even without a user: equal time either way (D12).
      const check = await verifyPassword(user?.passwordHash, dto.password);
      if (!user || !check.ok || !user.active) {
        outcome = 'failure';
        throw new AppError('INVALID_CREDENTIALS', 'Invalid e-mail or password');
      }
      outcome = 'success';
      if (check.needsRehash) await this.rehash(user, dto.password);
      return await this.sessionFor(user, 'Sign-in successful');
    } finally {
      await this.throttle.settle(attempt, outcome);
    }
  }

  /** Token and the fields of spec §2.13 for a verified user (sign-in and account creation). */
  async sessionFor(user: UserRecord, message: string): Promise<SigninResponseDto> {
    const issued = this.tokens.issue(user);
    this.logger.log(
      { event: 'user_signin_successful', email: user.email, tenantId: user.tenantId, userId: user.id },
      'user_signin_successful',
    );
    return {
      token: issued.token,
      user_id: user.id,
      tenant_id: user.tenantId,
      expires_in: issued.expiresIn,
      expires_at: issued.expiresAt,
      type: 'Bearer',
      tenantSettings: await this.tenantSettings(user),
      message,
    };
  }

  /** Rule 4: a failure to load tenant settings is logged and gives null; sign-in still succeeds. */
  private async tenantSettings(user: UserRecord): Promise<TenantConfigView | null> {
    try {
      const row = await this.tenants.findById(user.tenantId);
      if (!row) throw new Error('tenant row not found');
      return this.tenantConfig.view(row);
    } catch (err) {
      this.logger.warn(
        {
          event: 'signin_tenant_settings_failed',
          tenantId: user.tenantId,
          userId: user.id,
          err: errorMessage(err),
        },
        'signin_tenant_settings_failed',
      );
      return null;
    }
  }

  /**
   * D12: a bcrypt hash that verified is replaced with argon2id. The password itself is unchanged,
   * so the user's tokens stay valid (no revokeUserTokens here).
   */
  private async rehash(user: UserRecord, password: string): Promise<void> {
    try {
      await this.users.updatePasswordHash(user.tenantId, user.id, await hashPassword(password));
      this.logger.log(
        { event: 'password_rehashed', tenantId: user.tenantId, userId: user.id },
        'password_rehashed',
      );
    } catch (err) {
      this.logger.warn(
        { tenantId: user.tenantId, userId: user.id, err: errorMessage(err) },
        'Password rehash failed',
      );
    }
  }

  /** D14, D46: the token's jti is revoked (database, then cache) until the token would have expired. */
  async logout(user: AuthUser): Promise<{ message: string }> {
    await this.revocations.revokeToken(user);
    this.logger.log({ event: 'user_logout', tenantId: user.tenantId, userId: user.userId }, 'user_logout');
    return { message: 'Logged out' };
  }

  /**
   * The user as the database has it now, not as the token says: the role and its permissions are
   * resolved as JwtAuthGuard resolves them (userStateOf), so a role changed since sign-in shows.
   * `role_id` is the role assigned to the user (usr_role_id) even when that role grants nothing
   * (inactive, deleted, of another tenant); `role_code`, `roles` and `permissions` are then empty.
   */
  async profile(tenant: TenantContext, user: AuthUser): Promise<ProfileDto> {
    const record = await this.users.findById(tenant.id, user.userId);
    if (!record) throw new NotFoundError('User not found');
    const state = userStateOf(record, null);
    return {
      user_id: record.id,
      email_id: record.email,
      role_id: record.roleId,
      role_code: state.roleCodes[0] ?? null,
      first_name: record.firstName,
      last_name: record.lastName,
      tenant_id: tenant.id,
      tenant_code: tenant.code,
      tenant_name: tenant.name,
      roles: state.roleCodes,
      permissions: state.permissions,
    };
  }
}
