import { backoffDelayMs } from '../../common/backoff';
import { errorMessage } from '../../common/errors/error-message';
/**
 * The connect loop shared by the configuration database (DatabaseService) and the external
 * connections (D3): SQL_CONNECT_MAX_ATTEMPTS attempts on transient errors, exponential backoff
 * (500 ms doubling, at most 10 s), and no attempt that would start after the deadline
 * (SQL_RESUME_MAX_WAIT_MS). A non-transient error (bad password, unknown database) gives up at once.
 */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Driver errors worth retrying: the server is not there yet or is starting. */
export function isTransientConnectError(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | undefined;
  const code = e?.code ?? '';
  const message = e?.message ?? '';
  return (
    [
      'ECONNREFUSED',
      'ECONNRESET',
      'ETIMEDOUT',
      'EHOSTUNREACH',
      'ENOTFOUND',
      'EAI_AGAIN',
      'ESOCKET',
      'ETIMEOUT',
      'PROTOCOL_CONNECTION_LOST',
      '57P03',
      'ER_CON_COUNT_ERROR',
    ].includes(code) || /the database system is starting up|timeout|connect/i.test(message)
  );
}

/** Waits between connect attempts: 0.5 s, 1 s, 2 s… at most 10 s. */
export const CONNECT_BACKOFF = { baseMs: 500, maxMs: 10_000 };

export interface RetryPolicy {
  maxAttempts: number;
  /** Epoch ms; no retry is scheduled whose delay would end after it. */
  deadline: number;
}

export interface RetryHooks {
  /** A transient failure; the next attempt follows after `delayMs`. */
  onRetry(attempt: number, delayMs: number, message: string): void;
  /** The loop gives up; the error is rethrown after this. */
  onGiveUp(attempt: number, message: string): void;
  /** Checked before each retry, e.g. during shutdown; true stops the loop. */
  shouldStop?(): boolean;
}

export class RetryStoppedError extends Error {
  constructor() {
    super('Connect attempts stopped (shutting down)');
    this.name = 'RetryStoppedError';
  }
}

/** Runs `connect` until it succeeds or the policy gives up; resolves with the attempt count. */
export async function retryConnect<T>(
  connect: (attempt: number) => Promise<T>,
  policy: RetryPolicy,
  hooks: RetryHooks,
): Promise<{ value: T; attempts: number }> {
  for (let attempt = 1; ; attempt++) {
    try {
      return { value: await connect(attempt), attempts: attempt };
    } catch (err) {
      const delay = backoffDelayMs(CONNECT_BACKOFF, attempt);
      const message = errorMessage(err);
      if (
        !isTransientConnectError(err) ||
        attempt >= policy.maxAttempts ||
        Date.now() + delay > policy.deadline
      ) {
        hooks.onGiveUp(attempt, message);
        throw err;
      }
      hooks.onRetry(attempt, delay, message);
      await sleep(delay);
      if (hooks.shouldStop?.()) throw new RetryStoppedError();
    }
  }
}
