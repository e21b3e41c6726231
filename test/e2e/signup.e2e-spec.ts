import { createHash, randomBytes } from 'node:crypto';
import { CacheService } from '../../src/cache/cache.service';
import { DatabaseService } from '../../src/database/database.service';
import { CollectionEventsService } from '../../src/cache/collection-events';
import { authHeaders, DEMO_PASSWORD, signin, TENANT, tenantHeader } from '../support/auth';
import { ReceivedMail, startSmtpServer, TestSmtpServer } from '../support/smtp';
import { startTestApp, TestApp, waitFor } from '../support/test-app';

const waitForCondition = (check: () => boolean) => waitFor(() => Promise.resolve(check()), 5000, 20);

const PUBLIC_URL = 'https://app.example.test';
const MAIL_FROM = 'sign-up@example.test';
const PASSWORD = 'a-new-Passw0rd!';

/** Self-service sign-up (spec §4.1, D15) against a real SMTP server. */
describe('Sign-up (signup-otp, create-account)', () => {
  let t: TestApp;
  let smtp: TestSmtpServer;

  beforeAll(async () => {
    smtp = await startSmtpServer();
    t = await startTestApp({
      label: 'signup',
      env: { SMTP_URL: smtp.url, MAIL_FROM, PUBLIC_URL },
    });
  });

  afterAll(async () => {
    await t?.close();
    await smtp?.close();
  });

  /** A fresh address per test: the resend throttle is per tenant + e-mail. */
  const newEmail = (name: string): string => `${name}-${randomBytes(4).toString('hex')}@example.test`;

  function post(url: string, tenantId: string, payload: unknown) {
    return t.app.inject({
      method: 'POST',
      url: `/api/v1/auth/${url}`,
      headers: { 'x-tenant-id': tenantHeader(tenantId) },
      payload: payload as Record<string, unknown>,
    });
  }

  const requestCode = (tenantId: string, email: string) => post('signup-otp', tenantId, { email_id: email });

  function lastMailTo(email: string): ReceivedMail {
    const mails = smtp.mailsTo(email);
    expect(mails.length).toBeGreaterThan(0);
    return mails[mails.length - 1];
  }

  /** The code and link token of the last mail to `email`. */
  function secretsOf(email: string): { code: string; session: string } {
    const text = lastMailTo(email).text;
    const code = /^\s*(\d{6})\s*$/m.exec(text)?.[1];
    const session = /\/signup\?session=([A-Za-z0-9_-]{43})\b/.exec(text)?.[1];
    expect({ code, session }).toEqual({ code: expect.any(String), session: expect.any(String) });
    return { code: code!, session: session! };
  }

  async function codeFor(tenantId: string, email: string): Promise<{ code: string; session: string }> {
    const res = await requestCode(tenantId, email);
    expect(res.statusCode).toBe(200);
    return secretsOf(email);
  }

  function expectError(res: { statusCode: number; json(): any }, status: number, code: string): any {
    const body = res.json();
    expect({ status: res.statusCode, code: body.error?.code }).toEqual({ status, code });
    expect(body.success).toBe(false);
    expect(body.message).toBe(body.error.message);
    expect(body.meta.requestId).toEqual(expect.any(String));
    return body;
  }

  /** The `error` of the details entry of one field. */
  const detailOf = (body: any, field: string): string | undefined =>
    (body.error.details as Array<{ field: string; error: string }>).find((d) => d.field === field)?.error;

  describe('signup-otp', () => {
    it('should mail a 6-digit code and a one-time link and answer {message, email_id}', async () => {
      const email = newEmail('Mixed.Case');
      const res = await requestCode(TENANT.acme, `  ${email.toUpperCase()} `);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({
        success: true,
        data: { message: expect.any(String), email_id: email.toLowerCase() },
        meta: { timestamp: expect.any(String), requestId: expect.any(String) },
      });
      const mail = lastMailTo(email.toLowerCase());
      expect(mail.from).toBe(MAIL_FROM);
      expect(mail.subject).toContain('Acme Corporation');
      expect(mail.text).toContain(`${PUBLIC_URL}/signup?session=`);
      expect(mail.text).toMatch(/^\s*\d{6}\s*$/m);
    });

    it('should answer an existing account the same way and mail a notice without a code or link', async () => {
      const fresh = await requestCode(TENANT.acme, newEmail('fresh'));
      const before = smtp.mailsTo('viewer@acme.test').length;
      const existing = await requestCode(TENANT.acme, 'Viewer@Acme.test');
      expect(existing.statusCode).toBe(fresh.statusCode);
      expect(existing.json().data).toEqual({ ...fresh.json().data, email_id: 'viewer@acme.test' });

      const mails = smtp.mailsTo('viewer@acme.test');
      expect(mails).toHaveLength(before + 1);
      const notice = mails[mails.length - 1].text;
      expect(notice).toContain('already has an account');
      expect(notice).not.toMatch(/\d{6}/);
      expect(notice).not.toContain('session=');

      // No code exists to be used: every guess is refused, and the account is untouched.
      const guess = await post('create-account', TENANT.acme, {
        email_id: 'viewer@acme.test',
        otp: '000000',
        password: PASSWORD,
      });
      expect(detailOf(expectError(guess, 400, 'VALIDATION_ERROR'), 'otp')).toBe('expired');
      const signin = await post('signin', TENANT.acme, {
        email_id: 'viewer@acme.test',
        password: DEMO_PASSWORD,
      });
      expect(signin.statusCode).toBe(200);
    });

    it('should let an e-mail with an account in another tenant sign up in this one', async () => {
      const { code } = await codeFor(TENANT.acme, 'admin@globex.test');
      const res = await post('create-account', TENANT.acme, {
        email_id: 'admin@globex.test',
        otp: code,
        password: PASSWORD,
      });
      expect(res.statusCode).toBe(200);
      expect(res.json().data.tenant_id).toBe(TENANT.acme);
    });

    it('should refuse a second request within 60 s with 429 and Retry-After, and keep the first code', async () => {
      const email = newEmail('throttled');
      const { code } = await codeFor(TENANT.acme, email);
      const again = await requestCode(TENANT.acme, email);
      expectError(again, 429, 'RATE_LIMITED');
      expect(Number(again.headers['retry-after'])).toBeGreaterThan(0);
      expect(Number(again.headers['retry-after'])).toBeLessThanOrEqual(60);
      expect(smtp.mailsTo(email)).toHaveLength(1);
      // Existing accounts are throttled alike (no difference to observe).
      await requestCode(TENANT.acme, 'root@acme.test');
      expectError(await requestCode(TENANT.acme, 'root@acme.test'), 429, 'RATE_LIMITED');

      const res = await post('create-account', TENANT.acme, {
        email_id: email,
        otp: code,
        password: PASSWORD,
      });
      expect(res.statusCode).toBe(200);
    });

    it('should replace the previous code and link when a new code is issued', async () => {
      const email = newEmail('again');
      const first = await codeFor(TENANT.acme, email);
      // Skip the one-minute wait: drop the resend counter.
      const cache = t.app.get(CacheService);
      const key = cache.keys.signupOtp(TENANT.acme, createHash('sha256').update(email).digest('hex'));
      await cache.delete([`${key}:resend`]);
      const second = await codeFor(TENANT.acme, email);
      expect(smtp.mailsTo(email)).toHaveLength(2);
      expect(second.session).not.toBe(first.session);

      const oldLink = await post('create-account', TENANT.acme, {
        password: PASSWORD,
        session: first.session,
      });
      expect(detailOf(expectError(oldLink, 400, 'VALIDATION_ERROR'), 'session')).toBe('expired');
      if (first.code !== second.code) {
        const oldCode = await post('create-account', TENANT.acme, {
          email_id: email,
          otp: first.code,
          password: PASSWORD,
        });
        expect(detailOf(expectError(oldCode, 400, 'VALIDATION_ERROR'), 'otp')).toBe('invalid');
      }
      const res = await post('create-account', TENANT.acme, {
        email_id: email,
        otp: second.code,
        password: PASSWORD,
      });
      expect(res.statusCode).toBe(200);
    });

    it('should answer 500 when the mail cannot be delivered, and not throttle the retry', async () => {
      const email = newEmail('bounce');
      expectError(await requestCode(TENANT.acme, email), 500, 'SERVICE_ERROR');
      expectError(await requestCode(TENANT.acme, email), 500, 'SERVICE_ERROR');
    });

    it('should list missing and invalid fields as [{field, error}]', async () => {
      const missing = expectError(await post('signup-otp', TENANT.acme, {}), 400, 'VALIDATION_ERROR');
      expect(missing.error.details).toEqual([{ field: 'email_id', error: 'required' }]);

      for (const bad of ['not-an-e-mail', `${'x'.repeat(95)}@example.test`, 42]) {
        const body = expectError(
          await post('signup-otp', TENANT.acme, { email_id: bad }),
          400,
          'VALIDATION_ERROR',
        );
        expect(detailOf(body, 'email_id')).toEqual(expect.any(String));
      }
      const extra = expectError(
        await post('signup-otp', TENANT.acme, { email_id: newEmail('x'), role_id: 1 }),
        400,
        'VALIDATION_ERROR',
      );
      expect(detailOf(extra, 'role_id')).toEqual(expect.any(String));
    });

    it('should need a valid tenant header, and refuse an inactive tenant', async () => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/v1/auth/signup-otp',
        payload: { email_id: newEmail('nohdr') },
      });
      expect(expectError(res, 400, 'VALIDATION_ERROR').error.details).toEqual({ 'x-tenant-id': 'required' });
      expectError(await requestCode(TENANT.initech, newEmail('inactive')), 403, 'FORBIDDEN');
    });
  });

  describe('create-account', () => {
    it('should create the account with the code; the token works on /auth/profile', async () => {
      const email = newEmail('code-flow');
      const { code, session } = await codeFor(TENANT.acme, email);
      const res = await post('create-account', TENANT.acme, {
        email_id: email,
        otp: code,
        password: PASSWORD,
      });
      expect(res.statusCode).toBe(200);
      const data = res.json().data;
      expect(data).toEqual({
        token: expect.any(String),
        user_id: expect.any(Number),
        tenant_id: TENANT.acme,
        expires_in: expect.any(Number),
        expires_at: expect.any(String),
        type: 'Bearer',
        tenantSettings: expect.objectContaining({ tenant_id: TENANT.acme }),
        message: 'Account created',
      });

      const profile = await t.app.inject({
        method: 'GET',
        url: '/api/v1/auth/profile',
        headers: authHeaders(TENANT.acme, data.token),
      });
      expect(profile.statusCode).toBe(200);
      expect(profile.json().data).toMatchObject({
        user_id: data.user_id,
        email_id: email,
        role_code: 'VIEWER',
        tenant_id: TENANT.acme,
      });

      // The password was stored (argon2id) and signs in.
      const signin = await post('signin', TENANT.acme, { email_id: email, password: PASSWORD });
      expect(signin.statusCode).toBe(200);
      expect(signin.json().data.user_id).toBe(data.user_id);

      // Once only: the code and the link of the same mail are spent.
      const reuse = await post('create-account', TENANT.acme, {
        email_id: email,
        otp: code,
        password: PASSWORD,
      });
      expectError(reuse, 400, 'VALIDATION_ERROR');
      expectError(
        await post('create-account', TENANT.acme, { password: PASSWORD, session }),
        400,
        'VALIDATION_ERROR',
      );
    });

    it('should show the new user in a cached users list at once and publish the collection event (D37)', async () => {
      const root = (await signin(t.app, TENANT.acme, 'root@acme.test')).token;
      const listUsers = async () =>
        (
          await t.app.inject({
            method: 'GET',
            url: '/api/v1/users?limit=500',
            headers: authHeaders(TENANT.acme, root),
          })
        ).json().data.records as Array<{ id: number; email_id: string }>;
      // The list is now cached (D27, 300 s).
      const before = await listUsers();
      const events: unknown[] = [];
      const off = t.app.get(CollectionEventsService).subscribe((event) => {
        events.push(event);
      });
      try {
        const email = newEmail('listed');
        const { code } = await codeFor(TENANT.acme, email);
        const res = await post('create-account', TENANT.acme, {
          email_id: email,
          otp: code,
          password: PASSWORD,
        });
        expect(res.statusCode).toBe(200);
        const userId = res.json().data.user_id as number;
        const after = await listUsers();
        expect(after.map((u) => u.email_id)).toEqual([...before.map((u) => u.email_id), email]);
        await waitForCondition(() => events.length > 0);
        expect(events).toContainEqual(
          expect.objectContaining({
            type: 'created',
            entityCode: 'users',
            tenantId: TENANT.acme,
            id: userId,
          }),
        );
      } finally {
        off();
      }
    });

    it('should create the account with the session link in its tenant', async () => {
      const email = newEmail('link-flow');
      const { session } = await codeFor(TENANT.globex, email);
      const res = await post('create-account', TENANT.globex, { password: PASSWORD, session });
      expect(res.statusCode).toBe(200);
      const data = res.json().data;
      expect(data.tenant_id).toBe(TENANT.globex);

      const profile = await t.app.inject({
        method: 'GET',
        url: '/api/v1/auth/profile',
        headers: authHeaders(TENANT.globex, data.token),
      });
      expect(profile.statusCode).toBe(200);
      expect(profile.json().data).toMatchObject({
        email_id: email,
        tenant_id: TENANT.globex,
        role_code: 'VIEWER',
      });

      const reuse = await post('create-account', TENANT.globex, { password: PASSWORD, session });
      expect(detailOf(expectError(reuse, 400, 'VALIDATION_ERROR'), 'session')).toBe('expired');
    });

    it('should count wrong codes and refuse even the right code after 5 of them', async () => {
      const email = newEmail('wrong');
      const { code, session } = await codeFor(TENANT.acme, email);
      const wrong = code === '999999' ? '999998' : '999999';
      for (let i = 1; i <= 5; i++) {
        const res = await post('create-account', TENANT.acme, {
          email_id: email,
          otp: wrong,
          password: PASSWORD,
        });
        const body = expectError(res, 400, 'VALIDATION_ERROR');
        expect(detailOf(body, 'otp')).toBe(i < 5 ? 'invalid' : 'too_many_attempts');
      }
      const right = await post('create-account', TENANT.acme, {
        email_id: email,
        otp: code,
        password: PASSWORD,
      });
      expect(detailOf(expectError(right, 400, 'VALIDATION_ERROR'), 'otp')).toBe('too_many_attempts');
      const link = await post('create-account', TENANT.acme, { password: PASSWORD, session });
      expect(detailOf(expectError(link, 400, 'VALIDATION_ERROR'), 'session')).toBe('too_many_attempts');
      expect((await post('signin', TENANT.acme, { email_id: email, password: PASSWORD })).statusCode).toBe(
        401,
      );
    });

    it('should refuse an expired code and its link', async () => {
      const email = newEmail('expired');
      const { code, session } = await codeFor(TENANT.acme, email);
      // Age the stored entry past its 10 minutes (the cache TTL would drop it at the same moment).
      const cache = t.app.get(CacheService);
      const key = cache.keys.signupOtp(TENANT.acme, createHash('sha256').update(email).digest('hex'));
      const entry = await cache.getJson<Record<string, unknown>>(key);
      expect(entry).toEqual(expect.objectContaining({ expiresAt: expect.any(Number) }));
      expect(JSON.stringify(entry)).not.toContain(code);
      expect(JSON.stringify(entry)).not.toContain(session);
      await cache.setJson(key, { ...entry, expiresAt: Date.now() - 1000 }, 60);

      const res = await post('create-account', TENANT.acme, {
        email_id: email,
        otp: code,
        password: PASSWORD,
      });
      expect(detailOf(expectError(res, 400, 'VALIDATION_ERROR'), 'otp')).toBe('expired');
      const link = await post('create-account', TENANT.acme, { password: PASSWORD, session });
      expectError(link, 400, 'VALIDATION_ERROR');

      // A deleted entry (TTL elapsed) is refused the same way.
      const other = newEmail('gone');
      const second = await codeFor(TENANT.acme, other);
      await cache.delete([
        cache.keys.signupOtp(TENANT.acme, createHash('sha256').update(other).digest('hex')),
      ]);
      const gone = await post('create-account', TENANT.acme, {
        email_id: other,
        otp: second.code,
        password: PASSWORD,
      });
      expect(detailOf(expectError(gone, 400, 'VALIDATION_ERROR'), 'otp')).toBe('expired');
    });

    it('should never use a code or link of one tenant in another', async () => {
      const email = newEmail('cross');
      const { code, session } = await codeFor(TENANT.acme, email);
      const byCode = await post('create-account', TENANT.globex, {
        email_id: email,
        otp: code,
        password: PASSWORD,
      });
      expectError(byCode, 400, 'VALIDATION_ERROR');
      const byLink = await post('create-account', TENANT.globex, { password: PASSWORD, session });
      expect(detailOf(expectError(byLink, 400, 'VALIDATION_ERROR'), 'session')).toBe('wrong_tenant');
      expect((await post('signin', TENANT.globex, { email_id: email, password: PASSWORD })).statusCode).toBe(
        401,
      );

      // Still valid in its own tenant.
      const own = await post('create-account', TENANT.acme, { password: PASSWORD, session });
      expect(own.statusCode).toBe(200);
      expect(own.json().data.tenant_id).toBe(TENANT.acme);
    });

    it('should let only one of two concurrent uses of a code through', async () => {
      const email = newEmail('race');
      const { code } = await codeFor(TENANT.acme, email);
      const payload = { email_id: email, otp: code, password: PASSWORD };
      const results = await Promise.all([
        post('create-account', TENANT.acme, payload),
        post('create-account', TENANT.acme, payload),
      ]);
      const statuses = results.map((r) => r.statusCode).sort();
      expect(statuses[0]).toBe(200);
      expect([400, 409]).toContain(statuses[1]);
    });

    it('should answer 409 CONFLICT when the e-mail was registered meanwhile', async () => {
      const email = newEmail('meanwhile');
      const { code } = await codeFor(TENANT.acme, email);
      // Someone else creates the account between code and create-account (e.g. an administrator).
      const db = t.app.get(DatabaseService).dataSource;
      await db
        .createQueryBuilder()
        .insert()
        .into('app_users', ['usr_tenant_id', 'usr_email_id', 'usr_status', 'usr_is_deleted'])
        .values({ usr_tenant_id: Number(TENANT.acme), usr_email_id: email, usr_status: 1, usr_is_deleted: 0 })
        .execute();
      const res = await post('create-account', TENANT.acme, {
        email_id: email,
        otp: code,
        password: PASSWORD,
      });
      expectError(res, 409, 'CONFLICT');
    });

    it('should give the role named by tnt_add_dtls.signup.defaultRole', async () => {
      const db = t.app.get(DatabaseService).dataSource;
      const cache = t.app.get(CacheService);
      const row = await db
        .createQueryBuilder()
        .select('t.tnt_add_dtls', 'add')
        .from('app_tenants', 't')
        .where('t.tnt_id = :id', { id: Number(TENANT.globex) })
        .getRawOne<{ add: string | null }>();
      const add = JSON.parse(row?.add ?? '{}') as Record<string, unknown>;
      const setAdd = (value: unknown) =>
        db
          .createQueryBuilder()
          .update('app_tenants')
          .set({ tnt_add_dtls: JSON.stringify(value) })
          .where('tnt_id = :id', { id: Number(TENANT.globex) })
          .execute();
      await setAdd({ ...add, signup: { defaultRole: 'ADMIN' } });
      await cache.delete([cache.keys.tenant(TENANT.globex)]);
      try {
        const email = newEmail('admin-role');
        const { session } = await codeFor(TENANT.globex, email);
        const res = await post('create-account', TENANT.globex, { password: PASSWORD, session });
        expect(res.statusCode).toBe(200);
        const profile = await t.app.inject({
          method: 'GET',
          url: '/api/v1/auth/profile',
          headers: authHeaders(TENANT.globex, res.json().data.token),
        });
        expect(profile.json().data.role_code).toBe('ADMIN');
      } finally {
        await setAdd(add);
        await cache.delete([cache.keys.tenant(TENANT.globex)]);
      }
    });

    it('should list missing and invalid fields and refuse a mix of both forms', async () => {
      const empty = expectError(await post('create-account', TENANT.acme, {}), 400, 'VALIDATION_ERROR');
      expect(empty.error.details).toEqual(
        expect.arrayContaining([
          { field: 'email_id', error: 'required' },
          { field: 'otp', error: 'required' },
          { field: 'password', error: 'required' },
        ]),
      );
      expect(empty.error.details).toHaveLength(3);

      const bad = expectError(
        await post('create-account', TENANT.acme, { email_id: 'nope', otp: '12ab56', password: 'short' }),
        400,
        'VALIDATION_ERROR',
      );
      expect(bad.error.details.map((d: { field: string }) => d.field).sort()).toEqual([
        'email_id',
        'otp',
        'password',
      ]);

      const long = expectError(
        await post('create-account', TENANT.acme, { session: 'a'.repeat(43), password: 'p'.repeat(1025) }),
        400,
        'VALIDATION_ERROR',
      );
      expect(long.error.details).toEqual([{ field: 'password', error: expect.any(String) }]);

      const mixed = expectError(
        await post('create-account', TENANT.acme, {
          email_id: newEmail('mixed'),
          otp: '123456',
          session: 'a'.repeat(43),
          password: PASSWORD,
        }),
        400,
        'VALIDATION_ERROR',
      );
      expect(mixed.error.details).toEqual([{ field: 'session', error: expect.any(String) }]);

      const badSession = expectError(
        await post('create-account', TENANT.acme, { session: 'not a token', password: PASSWORD }),
        400,
        'VALIDATION_ERROR',
      );
      expect(badSession.error.details).toEqual([{ field: 'session', error: 'invalid' }]);
    });
  });

  describe('feature flag signup (D10)', () => {
    it('should answer 403 FEATURE_DISABLED on both routes when tnt_features.signup is false', async () => {
      const db = t.app.get(DatabaseService).dataSource;
      const code = `nosignup${randomBytes(3).toString('hex')}`;
      await db
        .createQueryBuilder()
        .insert()
        .into('app_tenants', [
          'tnt_tenant_code',
          'tnt_tenant_name',
          'tnt_features',
          'tnt_status',
          'tnt_is_deleted',
        ])
        .values({
          tnt_tenant_code: code,
          tnt_tenant_name: 'No Sign-up Ltd',
          tnt_features: JSON.stringify({ signup: false }),
          tnt_status: 1,
          tnt_is_deleted: 0,
        })
        .execute();
      const row = await db
        .createQueryBuilder()
        .select('t.tnt_id', 'id')
        .from('app_tenants', 't')
        .where('t.tnt_tenant_code = :code', { code })
        .getRawOne<{ id: unknown }>();
      const tenantId = String(row?.id);

      const email = newEmail('disabled');
      expectError(await requestCode(tenantId, email), 403, 'FEATURE_DISABLED');
      expectError(
        await post('create-account', tenantId, { email_id: email, otp: '123456', password: PASSWORD }),
        403,
        'FEATURE_DISABLED',
      );
      expect(smtp.mailsTo(email)).toHaveLength(0);

      // Turning it off on an existing tenant takes effect once its cached row is dropped.
      const cache = t.app.get(CacheService);
      await db
        .createQueryBuilder()
        .update('app_tenants')
        .set({ tnt_features: JSON.stringify({ export: false, signup: false }) })
        .where('tnt_id = :id', { id: Number(TENANT.globex) })
        .execute();
      await cache.delete([cache.keys.tenant(TENANT.globex)]);
      try {
        expectError(await requestCode(TENANT.globex, email), 403, 'FEATURE_DISABLED');
      } finally {
        await db
          .createQueryBuilder()
          .update('app_tenants')
          .set({ tnt_features: JSON.stringify({ export: false }) })
          .where('tnt_id = :id', { id: Number(TENANT.globex) })
          .execute();
        await cache.delete([cache.keys.tenant(TENANT.globex)]);
      }
      expect((await requestCode(TENANT.globex, email)).statusCode).toBe(200);
    });
  });
});
