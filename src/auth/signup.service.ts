import { errorMessage } from '../common/errors/error-message';
import { Injectable, Logger } from '@nestjs/common';
import { createHash, createHmac, hkdfSync, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
import { CacheService } from '../cache/cache.service';
import { CACHE_TTL } from '../cache/cache-keys';
import type { RecordContext } from '../records/record-context';
import { RecordContextFactory, type ServiceActor } from '../records/record-context.factory';

/** Sign-up creates the visitor's user: that, and nothing else (users are maintained by the system, D21). */
const SIGNUP_SERVICE: ServiceActor = { name: 'signup', permissions: ['create:users', 'admin:system'] };
import { CreateRecord } from '../records/use-cases/create-record';
import { AppError, ConflictError, ValidationError } from '../common/errors/app-error';
import type { TenantContext } from '../common/request-context';
import type { AppConfig } from '../config/config.schema';
import { InjectConfig } from '../config/inject-config.decorator';
import { TenantsRepository } from '../tenant/tenants.repository';
import type { SigninResponseDto } from './auth.dto';
import { AuthService } from './auth.service';
import { MailerService } from './mailer.service';
import { RolesRepository } from './roles.repository';
import { existingAccountMail, signupCodeMail } from './signup-mail';
import type { CreateAccountDto, SignupOtpDto, SignupOtpResponseDto } from './signup.dto';
import { normaliseEmail, UsersRepository } from './users.repository';

/** Lifetime of a code and its link (D15: 10 minutes). */
export const SIGNUP_CODE_TTL_S = CACHE_TTL.signupOtp;
/** Verifications per code; the next one finds the code dead, right or wrong (D15). */
export const SIGNUP_MAX_ATTEMPTS = 5;
/** At most one new code (or notice) per tenant + e-mail in this many seconds; sooner → 429. */
export const SIGNUP_RESEND_INTERVAL_S = 60;
/** The answer of signup-otp, whether or not the e-mail already has an account. */
export const SIGNUP_OTP_MESSAGE = 'If this e-mail can be registered, a sign-up code has been sent to it';

/** Cache entry of a code: hashes only, never the code or the token. */
export interface SignupCodeEntry {
  codeHash: string;
  sessionHash: string;
  /** Epoch milliseconds; checked as well as the cache TTL. */
  expiresAt: number;
}

/** Cache entry of a link token: which tenant and e-mail it signs up. */
export interface SignupSessionEntry {
  tenantId: string;
  email: string;
  emailHash: string;
  expiresAt: number;
}

export const sha256 = (value: string): string => createHash('sha256').update(value).digest('hex');

function invalid(field: string, error: string, message: string): ValidationError {
  return new ValidationError(message, [{ field, error }]);
}

/**
 * Self-service sign-up (D15): a mailed 6-digit code or one-time link proves the e-mail, then
 * create-account makes the user in the header's tenant. Codes and links are tenant-bound (the cache
 * keys and the session entry carry the tenant), live 10 minutes, allow 5 attempts and work once.
 */
@Injectable()
export class SignupService {
  private readonly logger = new Logger('Signup');
  /** HMAC key of the codes: a leaked cache entry does not give the code away by brute force. */
  /** Hashes codes with the first; a code hashed with a previous JWT secret still matches (D57). */
  private readonly codeKeys: Buffer[];

  constructor(
    @InjectConfig() private readonly config: AppConfig,
    private readonly users: UsersRepository,
    private readonly roles: RolesRepository,
    private readonly tenants: TenantsRepository,
    private readonly cache: CacheService,
    private readonly mailer: MailerService,
    private readonly auth: AuthService,
    private readonly createRecord: CreateRecord,
    private readonly contexts: RecordContextFactory,
  ) {
    this.codeKeys = [config.auth.jwtSecret, ...config.auth.jwtSecretsPrevious].map((secret) =>
      Buffer.from(hkdfSync('sha256', secret, 'mtb-signup', 'signup-otp code hash', 32)),
    );
  }

  /**
   * Mails a code and a link, or — when the e-mail already has an account in this tenant — a notice
   * without either. The answer is the same in both cases, so it reveals nothing about accounts.
   */
  async requestCode(tenant: TenantContext, dto: SignupOtpDto): Promise<SignupOtpResponseDto> {
    const email = normaliseEmail(dto.email_id);
    const keys = this.keysFor(tenant.id, email);
    await this.assertResendAllowed(keys.resend);
    try {
      if (await this.users.findByEmail(tenant.id, email)) {
        await this.mailer.send(
          existingAccountMail({ to: email, tenantName: tenant.name, signInUrl: this.baseUrl() }),
        );
        this.logger.log({ event: 'signup_notice_sent', tenantId: tenant.id, email }, 'signup_notice_sent');
      } else {
        await this.issueCode(tenant, email, keys);
        this.logger.log({ event: 'signup_code_sent', tenantId: tenant.id, email }, 'signup_code_sent');
      }
    } catch (err) {
      // Nothing was sent: the e-mail may ask again at once.
      await this.cache.delete([keys.resend]);
      throw err;
    }
    return { message: SIGNUP_OTP_MESSAGE, email_id: email };
  }

  /**
   * Verifies the code or link, then creates the user through the records core (D47) — the same
   * validation, unique-value lock, audit, cache invalidation and collection event as any users
   * write — and answers as sign-in does (spec §2.13).
   */
  async createAccount(
    tenant: TenantContext,
    dto: CreateAccountDto,
    requestId: string,
  ): Promise<SigninResponseDto> {
    const email =
      dto.session !== undefined
        ? await this.claimSession(tenant, dto.session)
        : await this.claimCode(tenant, dto.email_id ?? '', dto.otp ?? '');
    if (await this.users.findByEmail(tenant.id, email)) throw alreadyRegistered();
    const roleId = await this.defaultRoleId(tenant);
    const ctx = await this.signupContext(tenant.id, requestId);
    let created: Record<string, unknown>;
    try {
      created = await this.createRecord.execute(ctx, {
        email_id: email,
        password: dto.password,
        ...(roleId === null ? {} : { role_id: roleId }),
      });
    } catch (err) {
      // A concurrent sign-up of the same e-mail won the unique-value lock (or the unique index).
      if (isEmailTaken(err) && (await this.users.findByEmail(tenant.id, email))) throw alreadyRegistered();
      throw err;
    }
    const user = await this.users.findById(tenant.id, Number(created.id));
    if (!user) throw new Error('The new user could not be read back');
    this.logger.log(
      { event: 'user_signup_completed', tenantId: tenant.id, userId: user.id, email, roleId },
      'user_signup_completed',
    );
    return this.auth.sessionFor(user, 'Account created');
  }

  /**
   * The records context of a sign-up: the `users` entity and profile of the tenant, written by the
   * service itself (user id 0, `created_by: "signup"`), since nobody is signed in yet — with the
   * right to create a user only (users are maintained by the system, D21), and the tenant's users
   * profile still deciding (canPerform) as for anyone.
   */
  private signupContext(tenantId: string, requestId: string): Promise<RecordContext> {
    return this.contexts.forService(tenantId, 'users', requestId, SIGNUP_SERVICE);
  }

  private keysFor(tenantId: string, email: string) {
    const emailHash = sha256(email);
    const code = this.cache.keys.signupOtp(tenantId, emailHash);
    return { emailHash, code, resend: `${code}:resend` };
  }

  /** One counter per issued code (keyed by its link's hash), so a new code starts from zero. */
  private attemptsKey(codeKey: string, entry: SignupCodeEntry): string {
    return `${codeKey}:attempts:${entry.sessionHash.slice(0, 16)}`;
  }

  private codeHash(tenantId: string, emailHash: string, code: string, key = this.codeKeys[0]): string {
    return createHmac('sha256', key).update(`${tenantId}:${emailHash}:${code}`).digest('hex');
  }

  /** 429 with Retry-After when this tenant + e-mail got a code or notice within the interval. */
  private async assertResendAllowed(key: string): Promise<void> {
    let count: number;
    let ttl: number;
    try {
      count = await this.cache.store.incr(key, SIGNUP_RESEND_INTERVAL_S);
      ttl = count > 1 ? await this.cache.store.ttl(key) : SIGNUP_RESEND_INTERVAL_S;
      // A counter without expiry would block the e-mail for good.
      if (ttl === -1) await this.cache.store.set(key, String(count), SIGNUP_RESEND_INTERVAL_S);
    } catch (err) {
      this.logger.warn({ err: errorMessage(err) }, 'Sign-up throttle unavailable');
      throw new AppError('SERVICE_ERROR', 'Sign-up is unavailable right now; try again later');
    }
    if (count > 1) {
      const retryAfter = ttl > 0 ? ttl : SIGNUP_RESEND_INTERVAL_S;
      throw new AppError(
        'RATE_LIMITED',
        'A sign-up mail was sent to this e-mail less than a minute ago; wait before asking again',
        null,
        {},
        { 'Retry-After': String(retryAfter) },
      );
    }
  }

  /** Stores the hashes (failure → 500, nothing is mailed), then mails the code and the link. */
  private async issueCode(
    tenant: TenantContext,
    email: string,
    keys: ReturnType<SignupService['keysFor']>,
  ): Promise<void> {
    const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
    const session = randomBytes(32).toString('base64url');
    const entry: SignupCodeEntry = {
      codeHash: this.codeHash(tenant.id, keys.emailHash, code),
      sessionHash: sha256(session),
      expiresAt: Date.now() + SIGNUP_CODE_TTL_S * 1000,
    };
    const sessionKey = this.cache.keys.signupSession(entry.sessionHash);
    const previous = await this.cache.getJson<SignupCodeEntry>(keys.code);
    const sessionEntry: SignupSessionEntry = {
      tenantId: tenant.id,
      email,
      emailHash: keys.emailHash,
      expiresAt: entry.expiresAt,
    };
    const stored =
      (await this.cache.setJson(sessionKey, sessionEntry, SIGNUP_CODE_TTL_S)) &&
      (await this.cache.setJson(keys.code, entry, SIGNUP_CODE_TTL_S));
    if (!stored) {
      await this.cache.delete([sessionKey]);
      throw new AppError('SERVICE_ERROR', 'The sign-up code could not be stored; try again later');
    }
    // The new code replaces the previous one; its link dies with it.
    if (previous?.sessionHash) await this.cache.delete([this.cache.keys.signupSession(previous.sessionHash)]);
    try {
      await this.mailer.send(
        signupCodeMail({
          to: email,
          tenantName: tenant.name,
          code,
          link: `${this.baseUrl()}/signup?session=${session}`,
          minutes: Math.round(SIGNUP_CODE_TTL_S / 60),
        }),
      );
    } catch (err) {
      await this.cache.delete([keys.code, sessionKey]);
      throw err;
    }
  }

  /** The `{email_id, otp}` form: every attempt counts; the sixth finds the code dead. */
  private async claimCode(tenant: TenantContext, rawEmail: string, otp: string): Promise<string> {
    const email = normaliseEmail(rawEmail);
    const keys = this.keysFor(tenant.id, email);
    const entry = await this.cache.getJson<SignupCodeEntry>(keys.code);
    if (!entry || !(entry.expiresAt > Date.now())) {
      throw invalid(
        'otp',
        'expired',
        'The code has expired or was not issued for this e-mail; request a new one',
      );
    }
    let attempt: number;
    try {
      attempt = await this.cache.store.incr(this.attemptsKey(keys.code, entry), SIGNUP_CODE_TTL_S);
    } catch (err) {
      // Unlimited guesses are not an acceptable degradation.
      this.logger.warn({ err: errorMessage(err) }, 'Sign-up attempts could not be counted');
      throw new AppError('SERVICE_ERROR', 'The code could not be checked; try again later');
    }
    if (attempt > SIGNUP_MAX_ATTEMPTS) throw tooManyAttempts('otp');
    const expected = Buffer.from(String(entry.codeHash), 'hex');
    const matches = this.codeKeys.some((key) => {
      const given = Buffer.from(this.codeHash(tenant.id, keys.emailHash, otp, key), 'hex');
      return given.length === expected.length && timingSafeEqual(given, expected);
    });
    if (!matches) {
      if (attempt === SIGNUP_MAX_ATTEMPTS) {
        this.logger.warn({ event: 'signup_code_locked', tenantId: tenant.id, email }, 'signup_code_locked');
        throw tooManyAttempts('otp');
      }
      throw invalid('otp', 'invalid', `Wrong code; ${SIGNUP_MAX_ATTEMPTS - attempt} attempt(s) left`);
    }
    await this.consume(keys.code, entry, 'otp');
    return email;
  }

  /** The `{session}` form: the link's token, valid only in its tenant and while its code lives. */
  private async claimSession(tenant: TenantContext, session: string): Promise<string> {
    const sessionHash = sha256(session);
    const found = await this.cache.getJson<SignupSessionEntry>(this.cache.keys.signupSession(sessionHash));
    const expired = invalid(
      'session',
      'expired',
      'The sign-up link has expired or was already used; request a new code',
    );
    if (!found || !(found.expiresAt > Date.now())) throw expired;
    if (found.tenantId !== tenant.id) {
      throw invalid('session', 'wrong_tenant', 'The sign-up link belongs to another tenant');
    }
    const keys = this.keysFor(tenant.id, found.email);
    const entry = await this.cache.getJson<SignupCodeEntry>(keys.code);
    // A newer code replaced this link's code, or the code was used or expired.
    if (!entry || entry.sessionHash !== sessionHash || !(entry.expiresAt > Date.now())) throw expired;
    const attempts = await this.cache.store.get(this.attemptsKey(keys.code, entry)).catch(() => null);
    if (Number(attempts ?? 0) >= SIGNUP_MAX_ATTEMPTS) throw tooManyAttempts('session');
    await this.consume(keys.code, entry, 'session');
    return found.email;
  }

  /** Once only: of concurrent claims, the one whose delete removed the entry wins. */
  private async consume(codeKey: string, entry: SignupCodeEntry, field: string): Promise<void> {
    const removed = await this.cache.delete([codeKey]);
    await this.cache.delete([
      this.cache.keys.signupSession(entry.sessionHash),
      this.attemptsKey(codeKey, entry),
    ]);
    if (removed !== 1) throw invalid(field, 'used', 'This code or link was already used; request a new one');
  }

  /**
   * `tnt_add_dtls.signup.defaultRole` when set (that role, or none if the tenant lacks it — never a
   * silent fallback to something else), else the tenant's VIEWER role, else no role.
   */
  private async defaultRoleId(tenant: TenantContext): Promise<number | null> {
    const signup = (await this.tenants.findById(tenant.id))?.addDtls.signup;
    const configured =
      typeof signup === 'object' && signup !== null && 'defaultRole' in signup
        ? signup.defaultRole
        : undefined;
    if (typeof configured === 'string' && configured.trim() !== '') {
      const id = await this.roles.findActiveIdByCode(tenant.id, configured.trim());
      if (id === undefined) {
        this.logger.warn(
          { tenantId: tenant.id, role: configured },
          'Sign-up default role not found in the tenant; the account gets no role',
        );
      }
      return id ?? null;
    }
    return (await this.roles.findActiveIdByCode(tenant.id, 'VIEWER')) ?? null;
  }

  private baseUrl(): string {
    return (this.config.api.publicUrl ?? `http://localhost:${this.config.api.port}`).replace(/\/+$/, '');
  }
}

function alreadyRegistered(): ConflictError {
  return new ConflictError(
    'An account with this e-mail already exists',
    [{ field: 'email_id', error: 'already_registered' }],
    'duplicate_value',
  );
}

function tooManyAttempts(field: string): ValidationError {
  return invalid(
    field,
    'too_many_attempts',
    'Too many wrong codes; this code is no longer valid, request a new one',
  );
}

/** The error of a users create that lost the e-mail to a concurrent one (lock or unique index). */
function isEmailTaken(err: unknown): boolean {
  if (!(err instanceof AppError)) return false;
  if (err.code === 'CONFLICT') return true;
  return (
    err.code === 'VALIDATION_ERROR' &&
    Array.isArray(err.details) &&
    (err.details as Array<{ field?: unknown }>).some((d) => d.field === 'email_id')
  );
}
