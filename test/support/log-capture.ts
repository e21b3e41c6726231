import type * as Logging from '../../src/common/logging';
import type { AppConfig } from '../../src/config/config.schema';

/** Every line the app's pino loggers wrote (the access log and nestjs-pino's Logger alike). */
export const capturedLogLines: string[] = [];

/**
 * The logging module with `pinoParams` writing to `capturedLogLines` as well: the app builds its
 * logger from pinoParams(config), so the same options with a stream of the test's own. Use as
 * `jest.mock('../../src/common/logging', () =>
 *    jest.requireActual<typeof import('../support/log-capture')>('../support/log-capture').loggingWithCapture())`.
 */
export function loggingWithCapture(): typeof Logging {
  const actual = jest.requireActual<typeof Logging>('../../src/common/logging');
  return {
    ...actual,
    pinoParams: (config: AppConfig) => {
      const params = actual.pinoParams(config);
      const stream = {
        write: (chunk: string) => {
          capturedLogLines.push(...chunk.split('\n').filter((l) => l.trim() !== ''));
        },
      };
      return { ...params, pinoHttp: { ...params.pinoHttp, stream } };
    },
  };
}
