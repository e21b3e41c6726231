import { backoffDelayMs } from '../../common/backoff';
import { CONNECT_BACKOFF, isTransientConnectError, retryConnect, RetryStoppedError } from './connect-retry';

const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });

function hooks() {
  return { onRetry: jest.fn(), onGiveUp: jest.fn() };
}

describe('retryConnect', () => {
  it('should back off 500 ms doubling up to 10 s', () => {
    expect([1, 2, 3, 4, 5, 6].map((a) => backoffDelayMs(CONNECT_BACKOFF, a))).toEqual([
      500, 1000, 2000, 4000, 8000, 10000,
    ]);
  });

  it('should classify transient errors as DatabaseService always did', () => {
    expect(isTransientConnectError(refused)).toBe(true);
    expect(isTransientConnectError(new Error('password authentication failed for user "x"'))).toBe(false);
  });

  it('should return the value and attempt count after a transient failure', async () => {
    const h = hooks();
    let calls = 0;
    const result = await retryConnect(
      async () => {
        calls++;
        if (calls === 1) throw refused;
        return 'ok';
      },
      { maxAttempts: 3, deadline: Date.now() + 10_000 },
      h,
    );
    expect(result).toEqual({ value: 'ok', attempts: 2 });
    expect(h.onRetry).toHaveBeenCalledWith(1, 500, refused.message);
    expect(h.onGiveUp).not.toHaveBeenCalled();
  });

  it('should give up at once on a non-transient error', async () => {
    const h = hooks();
    const fatal = new Error('password authentication failed');
    await expect(
      retryConnect(() => Promise.reject(fatal), { maxAttempts: 5, deadline: Date.now() + 10_000 }, h),
    ).rejects.toBe(fatal);
    expect(h.onGiveUp).toHaveBeenCalledWith(1, fatal.message);
    expect(h.onRetry).not.toHaveBeenCalled();
  });

  it('should stop after maxAttempts and when the deadline would pass', async () => {
    const h = hooks();
    await expect(
      retryConnect(() => Promise.reject(refused), { maxAttempts: 1, deadline: Date.now() + 10_000 }, h),
    ).rejects.toBe(refused);
    expect(h.onGiveUp).toHaveBeenCalledWith(1, refused.message);
    const h2 = hooks();
    await expect(
      retryConnect(() => Promise.reject(refused), { maxAttempts: 9, deadline: Date.now() + 100 }, h2),
    ).rejects.toBe(refused);
    expect(h2.onGiveUp).toHaveBeenCalledWith(1, refused.message);
  });

  it('should stop when shouldStop says so', async () => {
    await expect(
      retryConnect(
        () => Promise.reject(refused),
        { maxAttempts: 9, deadline: Date.now() + 10_000 },
        { ...hooks(), shouldStop: () => true },
      ),
    ).rejects.toBeInstanceOf(RetryStoppedError);
  });
});
