import type { LoggerService } from '@nestjs/common';
import { QuietFrameworkLogger } from './logging';

describe(QuietFrameworkLogger.name, () => {
  function recorder() {
    const lines: Array<[string, unknown[]]> = [];
    const at =
      (level: string) =>
      (...args: unknown[]): void => {
        lines.push([level, args]);
      };
    const inner: LoggerService = {
      log: at('info'),
      error: at('error'),
      warn: at('warn'),
      debug: at('debug'),
      verbose: at('verbose'),
      fatal: at('fatal'),
    };
    return { lines, logger: new QuietFrameworkLogger(inner) };
  }

  it("should demote Nest's module and route listings from info to debug", () => {
    const { lines, logger } = recorder();
    logger.log('AppModule dependencies initialized', 'InstanceLoader');
    logger.log('Mapped {/api/v1/auth/signin, POST} route', 'RouterExplorer');
    logger.log('Nest application successfully started', 'NestApplication');
    expect(lines.map(([level]) => level)).toEqual(['debug', 'debug', 'debug']);
  });

  it("should pass the service's own lines and every warning or error through unchanged", () => {
    const { lines, logger } = recorder();
    logger.log('Ready in 1200 ms', 'Startup');
    logger.log({ event: 'entity.created' }, 'entity.created');
    logger.warn('slow', 'InstanceLoader');
    logger.error('boom', 'stack', 'RouterExplorer');
    expect(lines).toEqual([
      ['info', ['Ready in 1200 ms', 'Startup']],
      ['info', [{ event: 'entity.created' }, 'entity.created']],
      ['warn', ['slow', 'InstanceLoader']],
      ['error', ['boom', 'stack', 'RouterExplorer']],
    ]);
  });
});
