import {
  AppError,
  AuthorizationError,
  ConflictError,
  NotFoundError,
  RateLimitedError,
  ServiceError,
  ValidationError,
} from './app-error';
import { httpStatusOf, isTransient } from './error-codes';

describe('isTransient', () => {
  it('should retry what another try may mend: busy and stale conflicts, limits, outages, unknown errors', () => {
    expect(isTransient(new ConflictError('x', null, 'busy'))).toBe(true);
    expect(isTransient(new ConflictError('x', null, 'stale_record'))).toBe(true);
    expect(isTransient(new RateLimitedError('x', 1000))).toBe(true);
    expect(isTransient(new ServiceError())).toBe(true);
    expect(isTransient(new AppError('DATABASE_UNAVAILABLE', 'x'))).toBe(true);
    expect(isTransient(new Error('connection reset'))).toBe(true);
    expect(isTransient(Object.assign(new Error('deadlock'), { code: '40P01' }))).toBe(true);
  });

  it('should not retry what fails the same way again: bad input, no permission, a missing record, lasting conflicts', () => {
    expect(isTransient(new ValidationError('x'))).toBe(false);
    expect(isTransient(new AuthorizationError())).toBe(false);
    expect(isTransient(new NotFoundError())).toBe(false);
    expect(isTransient(new ConflictError('x', null, 'dependents_exist'))).toBe(false);
    expect(isTransient(new ConflictError('x', null, 'duplicate_value'))).toBe(false);
    expect(isTransient(new ConflictError('x', null, 'illegal_state'))).toBe(false);
    expect(isTransient(new ConflictError('x'))).toBe(false);
  });
});

describe('httpStatusOf', () => {
  it('should map the codes of D18 to their statuses, in the HTTP layer only', () => {
    expect(
      ['VALIDATION_ERROR', 'TOKEN_REVOKED', 'FEATURE_DISABLED', 'CONFLICT', 'RATE_LIMITED', 'NOT_READY'].map(
        (c) => httpStatusOf(c as never),
      ),
    ).toEqual([400, 401, 403, 409, 429, 503]);
  });
});
