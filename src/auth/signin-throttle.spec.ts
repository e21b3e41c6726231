import type { CacheService } from '../cache/cache.service';
import { AppError } from '../common/errors/app-error';
import {
  SIGNIN_ACCOUNT_MAX_FAILURES,
  SIGNIN_MAX_FAILURES,
  SigninThrottle,
  type SigninAttempt,
} from './signin-throttle';

/** The in-process counters (the embedded default): a cache whose store is not Redis. */
const throttle = (): SigninThrottle =>
  new SigninThrottle({ keys: { prefix: 'spec' }, store: {} } as unknown as CacheService);

const from = (address: string, email = 'a@acme.test'): SigninAttempt => ({ tenantId: '1', email, address });

async function refusal(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
    return undefined;
  } catch (err) {
    return err instanceof AppError ? err.code : String(err);
  }
}

describe(SigninThrottle.name, () => {
  describe('reserve', () => {
    it('should let exactly the address bound of parallel attempts through, holding their slots', async () => {
      const t = throttle();
      const answers = await Promise.all(
        Array.from({ length: 20 }, () => refusal(t.reserve(from('10.0.0.1')))),
      );
      expect(answers.filter((a) => a === undefined)).toHaveLength(SIGNIN_MAX_FAILURES);
      expect(answers.filter((a) => a === 'RATE_LIMITED')).toHaveLength(20 - SIGNIN_MAX_FAILURES);
    });

    it('should not spend the account on attempts the address refuses (D46)', async () => {
      const t = throttle();
      for (let i = 0; i < 200; i++) await refusal(t.reserve(from('10.0.0.1')));
      // 5 failures from 10.0.0.1 count against the account; 45 more addresses' worth are left.
      for (let i = 0; i < SIGNIN_ACCOUNT_MAX_FAILURES - SIGNIN_MAX_FAILURES; i++)
        expect(await refusal(t.reserve(from(`10.1.0.${i}`)))).toBeUndefined();
      expect(await refusal(t.reserve(from('10.2.0.1')))).toBe('RATE_LIMITED');
    });

    it('should give the address slot back when the account refuses', async () => {
      const t = throttle();
      for (let i = 0; i < SIGNIN_ACCOUNT_MAX_FAILURES; i++) await t.reserve(from(`10.1.0.${i}`));
      for (let i = 0; i < SIGNIN_MAX_FAILURES + 3; i++)
        expect(await refusal(t.reserve(from('10.3.0.1')))).toBe('RATE_LIMITED');
      // Another account from that address is unaffected, and so would be this one once the hour ends.
      expect(await refusal(t.reserve(from('10.3.0.1', 'b@acme.test')))).toBeUndefined();
    });
  });

  describe('settle', () => {
    it('should keep a failure spent', async () => {
      const t = throttle();
      for (let i = 0; i < SIGNIN_MAX_FAILURES; i++) {
        await t.reserve(from('10.0.0.1'));
        await t.settle(from('10.0.0.1'), 'failure');
      }
      expect(await refusal(t.reserve(from('10.0.0.1')))).toBe('RATE_LIMITED');
    });

    it('should clear the address and hand back the account slot on success', async () => {
      const t = throttle();
      for (let round = 0; round < SIGNIN_ACCOUNT_MAX_FAILURES * 2; round++) {
        expect(await refusal(t.reserve(from('10.0.0.1')))).toBeUndefined();
        await t.settle(from('10.0.0.1'), 'success');
      }
    });

    it('should hand back both slots of an attempt that ended without a verdict', async () => {
      const t = throttle();
      for (let i = 0; i < SIGNIN_MAX_FAILURES * 3; i++) {
        expect(await refusal(t.reserve(from('10.0.0.1')))).toBeUndefined();
        await t.settle(from('10.0.0.1'), 'aborted');
      }
    });
  });
});
