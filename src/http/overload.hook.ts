import { Logger } from '@nestjs/common';
import underPressure, { FastifyUnderPressureOptions } from '@fastify/under-pressure';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppConfig } from '../config/config.schema';
import { PROBE_PATHS } from '../common/http/probe-paths';
import { ErrorBody, errorBody } from '../common/http/envelope';
import type {} from '../common/decorators/context.decorators';

/**
 * Load shedding (issue 13 #6): while the event loop is saturated — the mean delay of its timers, or
 * the share of the last sample interval it was busy, above the configured limits — every request
 * but the three probes is answered at once with 503 OVERLOADED and `Retry-After`, in the error
 * envelope (D17), instead of queueing until the client times out. The measurement and the
 * `onRequest` check are @fastify/under-pressure's; this file decides who is exempt and what the
 * answer looks like.
 */

/** The event of the warning an overload episode writes (its first shed request). */
export const OVERLOADED_EVENT = 'service.overloaded';
export const OVERLOADED_MESSAGE = 'Service overloaded, retry later';
/** Shedding stops being one episode (for the log) after this long without a shed request. */
const EPISODE_GAP_MS = 10_000;

/** What a shed request is reported to: the metrics counter, by under-pressure's signal. */
export type ShedListener = (reason: string) => void;

export interface OverloadHooks {
  onShed?: ShedListener;
  /**
   * False while the readiness gate holds (start-up, shutdown): the gate answers 503 NOT_READY
   * itself, and the long turns of start-up (migrations, seeding) must not turn that into OVERLOADED.
   */
  shedding?: () => boolean;
}

interface WarnLogger {
  warn(message: unknown, ...rest: unknown[]): void;
}

/**
 * Health checks answered under pressure too (orchestrators must not restart a busy but live
 * instance, and an operator needs them most then): the three probes and the health routes
 * (`/health`, `/health/db`, `/health/redis`, `/api/v1/health`), whose checks run at most once a
 * second whatever the load (probe-checks.ts). `/metrics` is shed like any other route.
 */
const HEALTH_ROUTES: ReadonlySet<string> = new Set([
  '/health',
  '/health/db',
  '/health/redis',
  '/api/v1/health',
]);

export function isExemptFromShedding(url: string): boolean {
  const path = url.split('?', 1)[0];
  return PROBE_PATHS.has(path) || HEALTH_ROUTES.has(path);
}

/**
 * under-pressure's `pressureHandler`: undefined lets the request through (the probes, and
 * everything while the readiness gate holds); a body is
 * sent by under-pressure with `reply.send` and ends the request there. The body is returned rather
 * than sent here because under-pressure calls `next()` after a handler that returns nothing, and with
 * the async envelope hook the reply would not have ended yet, so the route would run as well.
 */
export function overloadPressureHandler(
  options: { retryAfterS: number } & OverloadHooks,
  logger: WarnLogger = new Logger('Overload'),
  now: () => number = Date.now,
): (
  request: FastifyRequest,
  reply: FastifyReply,
  type: string,
  value: number | undefined,
) => ErrorBody | undefined {
  let lastShedAt = -Infinity;
  return (request, reply, type, value) => {
    if (isExemptFromShedding(request.url) || options.shedding?.() === false) return undefined;
    const at = now();
    if (at - lastShedAt > EPISODE_GAP_MS) {
      logger.warn(
        { event: OVERLOADED_EVENT, category: 'overload', signal: type, value },
        `Event loop under pressure (${type} ${formatValue(type, value)}): answering 503 OVERLOADED except to the probes`,
      );
    }
    lastShedAt = at;
    options.onShed?.(type);
    request.errorCode = 'OVERLOADED';
    // The x-request-id hook (HttpHooksService) runs after this one: echo the id here (D19).
    void reply
      .status(503)
      .header('retry-after', String(options.retryAfterS))
      .header('x-request-id', request.id);
    return errorBody('OVERLOADED', OVERLOADED_MESSAGE, null, request.id);
  };
}

function formatValue(type: string, value: number | undefined): string {
  if (value === undefined) return '';
  return type === underPressure.TYPE_EVENT_LOOP_UTILIZATION ? value.toFixed(2) : `${Math.round(value)} ms`;
}

/** The plugin's options for the configuration, or undefined when both limits are off. */
export function underPressureOptions(
  config: AppConfig['overload'],
  hooks: OverloadHooks = {},
): FastifyUnderPressureOptions | undefined {
  if (config.maxEventLoopDelayMs <= 0 && config.maxEventLoopUtilization <= 0) return undefined;
  const handler = overloadPressureHandler({ retryAfterS: config.retryAfterS, ...hooks });
  return {
    maxEventLoopDelay: config.maxEventLoopDelayMs,
    maxEventLoopUtilization: config.maxEventLoopUtilization,
    // The share of the last interval, not the average since start-up (the plugin's default).
    eventLoopUtilizationMode: 'interval',
    sampleInterval: config.sampleIntervalMs,
    retryAfter: config.retryAfterS,
    // Typed as returning void, but the plugin sends any other return value (see above).
    pressureHandler: handler as unknown as FastifyUnderPressureOptions['pressureHandler'],
  };
}

/**
 * Registers @fastify/under-pressure on the application's Fastify instance. Called before
 * `app.init()`: the plugin loads with the adapter and its `onRequest` hook runs before the
 * hooks that Nest modules add at init (readiness gate, metrics), after the CORS hook.
 */
export function installOverloadProtection(
  fastify: FastifyInstance,
  config: AppConfig['overload'],
  hooks: OverloadHooks = {},
): void {
  const options = underPressureOptions(config, hooks);
  if (options) void fastify.register(underPressure, options);
}
