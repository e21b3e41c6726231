import { Logger } from '@nestjs/common';
import underPressure from '@fastify/under-pressure';
import Fastify, { FastifyReply, FastifyRequest } from 'fastify';
import {
  isExemptFromShedding,
  OVERLOADED_EVENT,
  overloadPressureHandler,
  underPressureOptions,
} from './overload.hook';

const CONFIG = {
  maxEventLoopDelayMs: 1000,
  maxEventLoopUtilization: 0.98,
  sampleIntervalMs: 1000,
  retryAfterS: 7,
};

function fakeReply() {
  const headers: Record<string, string> = {};
  const reply = {
    statusCode: 200,
    status(code: number) {
      reply.statusCode = code;
      return reply;
    },
    header(name: string, value: string) {
      headers[name] = value;
      return reply;
    },
  };
  return { reply, headers };
}

const request = (url: string) => ({ url, id: 'req-1' }) as FastifyRequest;

describe('overload hook', () => {
  describe('isExemptFromShedding', () => {
    it.each([
      '/healthz',
      '/readyz',
      '/livez',
      '/livez?verbose=1',
      '/health',
      '/health/db',
      '/health/redis',
      '/api/v1/health',
    ])('should exempt the health check %s', (url) => {
      expect(isExemptFromShedding(url)).toBe(true);
    });

    it.each(['/api/v1/customers', '/metrics', '/healthz/x', '/api/v1/healthz', '/health/other'])(
      'should not exempt %s',
      (url) => {
        expect(isExemptFromShedding(url)).toBe(false);
      },
    );
  });

  describe('overloadPressureHandler', () => {
    it('should let a probe through under pressure', () => {
      const onShed = jest.fn();
      const handler = overloadPressureHandler({ retryAfterS: 7, onShed }, { warn: jest.fn() });
      const { reply } = fakeReply();
      expect(
        handler(request('/healthz'), reply as unknown as FastifyReply, 'eventLoopDelay', 120),
      ).toBeUndefined();
      expect(reply.statusCode).toBe(200);
      expect(onShed).not.toHaveBeenCalled();
    });

    it('should leave the answer to the readiness gate while it holds', () => {
      const onShed = jest.fn();
      const handler = overloadPressureHandler(
        { retryAfterS: 7, onShed, shedding: () => false },
        { warn: jest.fn() },
      );
      const { reply } = fakeReply();
      expect(
        handler(request('/api/v1/customers'), reply as unknown as FastifyReply, 'eventLoopDelay', 120),
      ).toBeUndefined();
      expect(reply.statusCode).toBe(200);
      expect(onShed).not.toHaveBeenCalled();
    });

    it('should answer any other request with 503 OVERLOADED, Retry-After and the envelope', () => {
      const onShed = jest.fn();
      const handler = overloadPressureHandler({ retryAfterS: 7, onShed }, { warn: jest.fn() });
      const { reply, headers } = fakeReply();
      const body = handler(
        request('/api/v1/customers?page=2'),
        reply as unknown as FastifyReply,
        'eventLoopDelay',
        120,
      );
      expect(reply.statusCode).toBe(503);
      expect(headers).toEqual({ 'retry-after': '7', 'x-request-id': 'req-1' });
      expect(body).toEqual({
        success: false,
        message: 'Service overloaded, retry later',
        error: { code: 'OVERLOADED', message: 'Service overloaded, retry later', details: null },
        meta: { timestamp: expect.any(String), requestId: 'req-1' },
      });
      expect(onShed).toHaveBeenCalledWith('eventLoopDelay');
    });

    it('should warn once per episode, not per shed request', () => {
      const warn = jest.fn();
      let now = 1_000;
      const handler = overloadPressureHandler({ retryAfterS: 7 }, { warn }, () => now);
      const shed = () =>
        handler(
          request('/api/x'),
          fakeReply().reply as unknown as FastifyReply,
          'eventLoopUtilization',
          0.995,
        );
      shed();
      now += 500;
      shed();
      expect(warn).toHaveBeenCalledTimes(1);
      expect(warn).toHaveBeenCalledWith(
        { event: OVERLOADED_EVENT, category: 'overload', signal: 'eventLoopUtilization', value: 0.995 },
        expect.stringContaining('eventLoopUtilization 0.99'),
      );
      now += 60_000; // a quiet gap: the next shed starts a new episode
      shed();
      expect(warn).toHaveBeenCalledTimes(2);
    });
  });

  describe('underPressureOptions', () => {
    it('should be undefined when both limits are off', () => {
      expect(
        underPressureOptions({ ...CONFIG, maxEventLoopDelayMs: 0, maxEventLoopUtilization: 0 }),
      ).toBeUndefined();
    });

    it('should measure utilization per interval and carry the limits', () => {
      expect(underPressureOptions(CONFIG)).toMatchObject({
        maxEventLoopDelay: 1000,
        maxEventLoopUtilization: 0.98,
        eventLoopUtilizationMode: 'interval',
        sampleInterval: 1000,
        retryAfter: 7,
      });
    });
  });

  describe('with @fastify/under-pressure', () => {
    it('should end a shed request before its route runs, even behind an async preSerialization hook', async () => {
      const fastify = Fastify();
      const ran = jest.fn();
      const shed = jest.fn();
      jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
      // Only heapUsed > 1 byte: under pressure from the first sample on.
      await fastify.register(underPressure, {
        ...underPressureOptions({ ...CONFIG, sampleIntervalMs: 50 }, { onShed: shed }),
        maxEventLoopDelay: 0,
        maxEventLoopUtilization: 0,
        maxHeapUsedBytes: 1,
      });
      fastify.addHook('preSerialization', async (_request, _reply, payload: unknown) => payload);
      fastify.get('/api/work', async () => {
        ran();
        return { ok: true };
      });
      fastify.get('/healthz', async () => ({ status: 'ok' }));
      try {
        await fastify.ready();
        await new Promise((r) => setTimeout(r, 120));
        const res = await fastify.inject({ method: 'GET', url: '/api/work' });
        expect(res.statusCode).toBe(503);
        expect(res.headers['retry-after']).toBe('7');
        expect(res.json().error.code).toBe('OVERLOADED');
        expect(ran).not.toHaveBeenCalled();
        expect(shed).toHaveBeenCalledWith('heapUsedBytes');
        expect((await fastify.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
      } finally {
        jest.restoreAllMocks();
        await fastify.close();
      }
    });
  });
});
