import { AppError } from '../common/errors/app-error';
import type { AuthUser } from '../common/request-context';
import type { CacheService } from '../cache/cache.service';
import { RevocationService } from './revocation.service';
import type { RevocationsRepository } from './revocations.repository';
import type { TokenService } from './token.service';

const USER: AuthUser = {
  userId: 7,
  email: 'a@b.test',
  tenantId: '1',
  roleId: 1,
  roles: [],
  permissions: [],
  jti: 'jti-1',
  exp: Math.floor(Date.now() / 1000) + 3600,
};

/** Logout with a store that fails as given: the answer a client gets. */
async function logoutWith(failure: Error): Promise<unknown> {
  const repository = {
    insert: () => Promise.reject(failure),
    isTokenRevoked: () => Promise.reject(failure),
  } as unknown as RevocationsRepository;
  const service = new RevocationService(repository, {} as CacheService, {} as TokenService);
  return service.revokeToken(USER).then(
    () => undefined,
    (err: unknown) => err,
  );
}

describe(RevocationService.name, () => {
  describe('revokeToken', () => {
    it('should answer 503 DATABASE_UNAVAILABLE with Retry-After when the database cannot be reached', async () => {
      const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), {
        code: 'ECONNREFUSED',
      });
      const err = await logoutWith(refused);
      expect(err).toBeInstanceOf(AppError);
      expect(err).toMatchObject({
        code: 'DATABASE_UNAVAILABLE',
        headers: { 'Retry-After': '5' },
      });
    });

    it('should answer 500 SERVICE_ERROR when the row cannot be stored for another reason', async () => {
      const err = await logoutWith(Object.assign(new Error('value too long'), { code: '22001' }));
      expect(err).toMatchObject({ code: 'SERVICE_ERROR' });
    });
  });
});
