import { JwtService } from '@nestjs/jwt';
import jwt from 'jsonwebtoken';
import { createHash, createHmac, createSecretKey } from 'node:crypto';
import { loadConfig } from '../config/config.schema';
import { AppError } from '../common/errors/app-error';
import { TokenService } from './token.service';
import type { UserRecord } from './users.repository';

const SECRET = 'unit-test-jwt-secret-that-is-long-enough-0123';

const USER: UserRecord = {
  id: 4,
  tenantId: '2',
  email: 'u@example.test',
  firstName: null,
  lastName: null,
  passwordHash: null,
  roleId: 1,
  roleCode: 'ADMIN',
  permissions: ['*:*'],
  active: true,
};

function tokenService(secret = SECRET, previous?: string): TokenService {
  const config = loadConfig({
    NODE_ENV: 'test',
    JWT_SECRET: secret,
    ...(previous !== undefined ? { JWT_SECRET_PREVIOUS: previous } : {}),
    TENANT_ENCRYPTION_KEY: 'ab'.repeat(32),
  });
  const jwtService = new JwtService({
    secret: createSecretKey(Buffer.from(secret, 'utf8')),
    signOptions: { algorithm: 'HS256' },
    verifyOptions: { algorithms: ['HS256'], clockTolerance: 5 },
  });
  return new TokenService(jwtService, config);
}

/**
 * An HS256 token of exactly these claims, signed with the test secret. Not jsonwebtoken's sign: it
 * adds an iat and refuses the malformed claims these tests need.
 */
function signRaw(claims: object, header: object = {}, secret = SECRET): string {
  const enc = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const unsigned = `${enc({ alg: 'HS256', typ: 'JWT', ...header })}.${enc(claims)}`;
  return `${unsigned}.${createHmac('sha256', secret).update(unsigned).digest('base64url')}`;
}

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof AppError) return err.code;
    throw err;
  }
  return 'ok';
}

describe('TokenService', () => {
  const tokens = tokenService();
  const sign = (claims: object) => jwt.sign(claims, SECRET, { algorithm: 'HS256', expiresIn: 600 });
  const base = { sub: '4', user_id: 4, tenant_id: '2', jti: 'j-1' };

  describe('verified tokens remembered', () => {
    it('should answer a token verified before as it did, and expired once its time has passed', () => {
      const service = tokenService();
      const { token } = service.issue(USER);
      const exp = (jwt.decode(token) as { exp: number }).exp;
      const first = service.verify(token);
      expect(service.verify(token)).toEqual(first);
      // Past exp + the clock leeway: expired, though it verified before.
      expect(codeOf(() => service.verify(token, (exp + 5) * 1000))).toBe('TOKEN_EXPIRED');
      expect(codeOf(() => service.verify(token, (exp + 4) * 1000))).toBe('ok');
    });

    it('should still refuse a token whose issue time is in the future at the time asked', () => {
      const service = tokenService();
      const { token } = service.issue(USER);
      const iat = (jwt.decode(token) as { iat: number }).iat;
      expect(codeOf(() => service.verify(token))).toBe('ok');
      expect(codeOf(() => service.verify(token, (iat - 6) * 1000))).toBe('TOKEN_INVALID');
    });

    it('should remember no token that failed: a tampered copy of a good one is refused every time', () => {
      const service = tokenService();
      const { token } = service.issue(USER);
      const tampered = token.slice(0, -2) + (token.endsWith('AA') ? 'BB' : 'AA');
      expect(codeOf(() => service.verify(token))).toBe('ok');
      expect(codeOf(() => service.verify(tampered))).toBe('TOKEN_INVALID');
      expect(codeOf(() => service.verify(tampered))).toBe('TOKEN_INVALID');
    });
  });

  describe('issue', () => {
    it('should put the issue time in ms (iat_ms) beside iat, in the same second (D46)', () => {
      const before = Date.now();
      const { token } = tokens.issue(USER);
      const claims = jwt.decode(token) as { iat: number; iat_ms: number };
      expect(claims.iat_ms).toBeGreaterThanOrEqual(before);
      expect(claims.iat_ms).toBeLessThanOrEqual(Date.now());
      expect(Math.floor(claims.iat_ms / 1000)).toBe(claims.iat);
      expect(tokens.verify(token).issuedAtMs).toBe(claims.iat_ms);
    });
  });

  describe('verify', () => {
    const iat = Math.floor(Date.now() / 1000);

    it('should take iat_ms when present and fall back to iat × 1000 without it', () => {
      expect(tokens.verify(sign({ ...base, iat, iat_ms: iat * 1000 + 999 })).issuedAtMs).toBe(
        iat * 1000 + 999,
      );
      expect(tokens.verify(sign({ ...base, iat })).issuedAtMs).toBe(iat * 1000);
    });

    it('should refuse an iat_ms outside the second of iat, or not a whole number', () => {
      for (const iatMs of [iat * 1000 + 1000, iat * 1000 - 1, iat * 1000 + 0.5, String(iat * 1000), null]) {
        expect({ iatMs, code: codeOf(() => tokens.verify(sign({ ...base, iat, iat_ms: iatMs }))) }).toEqual({
          iatMs,
          code: 'TOKEN_INVALID',
        });
      }
    });

    describe('claims (issue 9, finding 8)', () => {
      const nowMs = Date.now();
      const now = Math.floor(nowMs / 1000);
      /** A token as this service issues it, then altered; no claim is added by jsonwebtoken. */
      const craft = (changes: Record<string, unknown>, drop: string[] = []) => {
        const claims: Record<string, unknown> = {
          sub: '4',
          user_id: 4,
          email: 'u@example.test',
          tenant_id: '2',
          tennr: '2',
          role_id: 1,
          roles: ['ADMIN'],
          permissions: ['*:*'],
          jti: 'j-2',
          iat: now,
          iat_ms: nowMs,
          exp: now + tokens.lifetimeS,
          ...changes,
        };
        for (const name of drop) delete claims[name];
        return signRaw(claims);
      };
      const verdict = (changes: Record<string, unknown>, drop: string[] = []) =>
        codeOf(() => tokens.verify(craft(changes, drop), nowMs));

      it('should accept a token as issued, and one issued by this service', () => {
        expect(verdict({})).toBe('ok');
        expect(codeOf(() => tokens.verify(tokens.issue(USER).token))).toBe('ok');
      });

      it('should refuse a token without iat', () => {
        expect(verdict({}, ['iat', 'iat_ms'])).toBe('TOKEN_INVALID');
        expect(verdict({}, ['iat'])).toBe('TOKEN_INVALID');
      });

      it('should refuse an iat that is not a whole number of seconds', () => {
        for (const iat of [String(now), now + 0.5, null, 1e20]) {
          expect({ iat, code: verdict({ iat }, ['iat_ms']) }).toEqual({ iat, code: 'TOKEN_INVALID' });
        }
      });

      it('should refuse an iat more than the clock tolerance (5 s) in the future', () => {
        expect(verdict({ iat: now + 5, iat_ms: (now + 5) * 1000 })).toBe('ok');
        expect(verdict({ iat: now + 6, iat_ms: (now + 6) * 1000 })).toBe('TOKEN_INVALID');
        const yearAhead = now + 365 * 86400;
        expect(verdict({ iat: yearAhead, exp: yearAhead + 600 }, ['iat_ms'])).toBe('TOKEN_INVALID');
      });

      it('should refuse a lifetime (exp - iat) longer than JWT_EXPIRES_IN plus the tolerance', () => {
        expect(tokens.lifetimeS).toBe(86400);
        expect(verdict({ exp: now + 86400 + 5 })).toBe('ok');
        expect(verdict({ exp: now + 86400 + 6 })).toBe('TOKEN_INVALID');
        expect(verdict({ exp: now + 365 * 86400 })).toBe('TOKEN_INVALID');
      });

      it('should refuse an exp that is not a safe integer', () => {
        for (const exp of [1e20, Number.MAX_SAFE_INTEGER + 2, now + 600.5, String(now + 600)]) {
          expect({ exp, code: verdict({ exp }) }).toEqual({ exp, code: 'TOKEN_INVALID' });
        }
      });

      it('should refuse a tennr other than tenant_id, and accept a token without tennr', () => {
        expect(verdict({ tennr: '3' })).toBe('TOKEN_INVALID');
        expect(verdict({ tennr: 2 })).toBe('TOKEN_INVALID');
        expect(verdict({ tennr: null })).toBe('TOKEN_INVALID');
        expect(verdict({}, ['tennr'])).toBe('ok');
      });

      it('should refuse a sub other than String(user_id), and take either alone', () => {
        for (const sub of ['5', '04', '4.0', ' 4', 4]) {
          expect({ sub, code: verdict({ sub }) }).toEqual({ sub, code: 'TOKEN_INVALID' });
        }
        for (const userId of ['4', 4.5, 0, -4, null]) {
          expect({ userId, code: verdict({ user_id: userId }, ['sub']) }).toEqual({
            userId,
            code: 'TOKEN_INVALID',
          });
        }
        expect(tokens.verify(craft({}, ['sub']), nowMs).userId).toBe(4);
        expect(tokens.verify(craft({}, ['user_id']), nowMs).userId).toBe(4);
        expect(verdict({}, ['sub', 'user_id'])).toBe('TOKEN_INVALID');
      });

      it('should refuse roles and permissions that are not arrays of strings', () => {
        for (const value of ['ADMIN', ['ADMIN', 1], [['*:*']], {}, null, [null]]) {
          expect({
            value,
            roles: verdict({ roles: value }),
            permissions: verdict({ permissions: value }),
          }).toEqual({ value, roles: 'TOKEN_INVALID', permissions: 'TOKEN_INVALID' });
        }
        expect(verdict({ roles: [], permissions: [] })).toBe('ok');
        expect(verdict({}, ['roles', 'permissions'])).toBe('ok');
      });

      it('should refuse a role_id that is neither null nor a whole number', () => {
        expect(verdict({ role_id: '1' })).toBe('TOKEN_INVALID');
        expect(verdict({ role_id: 1.5 })).toBe('TOKEN_INVALID');
        expect(verdict({ role_id: null })).toBe('ok');
      });

      it('should refuse an empty jti', () => {
        expect(verdict({ jti: '' })).toBe('TOKEN_INVALID');
      });
    });

    it('should return the request user beside the issue time', () => {
      const { issuedAtMs, ...user } = tokens.verify(sign({ ...base, iat }));
      expect(issuedAtMs).toBe(iat * 1000);
      expect(user).toEqual({
        userId: 4,
        email: '',
        tenantId: '2',
        roleId: null,
        roles: [],
        permissions: [],
        jti: 'j-1',
        exp: iat + 600,
      });
    });
  });

  describe('key rotation (D57)', () => {
    const NEW = 'the-next-jwt-secret-that-is-also-long-enough-4567';
    const idOf = (secret: string) => createHash('sha256').update(secret, 'utf8').digest('hex').slice(0, 8);
    const headerOf = (token: string): Record<string, unknown> =>
      JSON.parse(Buffer.from(token.split('.')[0], 'base64url').toString()) as Record<string, unknown>;
    const claims = () => {
      const now = Math.floor(Date.now() / 1000);
      return { sub: '4', user_id: 4, tenant_id: '2', jti: 'j', iat: now, exp: now + 60 };
    };

    it("should name the signing secret in the header's kid", () => {
      expect(headerOf(tokenService().issue(USER).token)).toMatchObject({ alg: 'HS256', kid: idOf(SECRET) });
    });

    it('should keep the sessions of the previous secret signed in, and sign with the new one', () => {
      const before = tokenService().issue(USER).token;
      const rotated = tokenService(NEW, SECRET);
      expect(rotated.verify(before).userId).toBe(4);
      const after = rotated.issue(USER).token;
      expect(headerOf(after).kid).toBe(idOf(NEW));
      // Step 1 of the runbook: the new secret accepted before any instance signs with it.
      expect(tokenService(SECRET, NEW).verify(after).userId).toBe(4);
    });

    it('should refuse a token of a secret no longer accepted, and an unknown or malformed kid', () => {
      const before = tokenService().issue(USER).token;
      expect(codeOf(() => tokenService(NEW).verify(before))).toBe('TOKEN_INVALID');
      expect(codeOf(() => tokenService().verify(signRaw(claims(), { kid: 'deadbeef' })))).toBe(
        'TOKEN_INVALID',
      );
      expect(codeOf(() => tokenService().verify(signRaw(claims(), { kid: 42 })))).toBe('TOKEN_INVALID');
      // The right secret under another secret's id is refused too: the id picks the key.
      expect(codeOf(() => tokenService(NEW, SECRET).verify(signRaw(claims(), { kid: idOf(NEW) })))).toBe(
        'TOKEN_INVALID',
      );
    });

    it('should accept a token without kid (issued before key ids) under any accepted secret', () => {
      const legacy = signRaw(claims());
      expect(tokenService(NEW, SECRET).verify(legacy).userId).toBe(4);
      expect(codeOf(() => tokenService(NEW).verify(legacy))).toBe('TOKEN_INVALID');
    });

    it('should say expired (not invalid) for an expired token of a previous secret', () => {
      const now = Math.floor(Date.now() / 1000);
      const old = signRaw({ ...claims(), iat: now - 120, exp: now - 60 }, { kid: idOf(SECRET) });
      expect(codeOf(() => tokenService(NEW, SECRET).verify(old))).toBe('TOKEN_EXPIRED');
    });
  });
});
