import fastify, { FastifyInstance } from 'fastify';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { SerializedJson } from '../serialized-json';
import { Enveloped } from './envelope';
import { installEnvelope } from './envelope.hook';

describe(installEnvelope.name, () => {
  let app: FastifyInstance;
  const page = { records: [{ id: 1, name: 'Ada "the first"', at: new Date(0) }], total: 1 };

  beforeAll(async () => {
    app = fastify({ genReqId: () => 'req-1' });
    installEnvelope(
      { getHttpAdapter: () => ({ getInstance: () => app }) } as unknown as NestFastifyApplication,
      new Set(['GET /object', 'GET /serialized', 'GET /extras']),
    );
    app.get('/object', async () => page);
    app.get('/serialized', async () => new SerializedJson(JSON.stringify(page)));
    app.get('/extras', async () => new Enveloped([1], { count: 1 }));
    app.get('/raw-serialized', async () => new SerializedJson('{"status":"ok"}'));
    await app.ready();
  });
  afterAll(() => app.close());

  it('should answer JSON text with the same bytes as the object it was serialized from', async () => {
    const object = await app.inject({ url: '/object' });
    const serialized = await app.inject({ url: '/serialized' });
    expect(serialized.statusCode).toBe(200);
    expect(serialized.headers['content-type']).toBe(object.headers['content-type']);
    const strip = (body: string) => body.replace(/"timestamp":"[^"]+"/, '"timestamp":"T"');
    expect(strip(serialized.body)).toBe(strip(object.body));
    expect(serialized.json()).toMatchObject({
      success: true,
      data: { records: [{ id: 1, name: 'Ada "the first"', at: '1970-01-01T00:00:00.000Z' }], total: 1 },
      meta: { requestId: 'req-1', timestamp: expect.any(String) },
    });
  });

  it('should put extras beside data, and answer JSON text as it is on a route outside the envelope', async () => {
    expect((await app.inject({ url: '/extras' })).json()).toMatchObject({
      success: true,
      data: [1],
      count: 1,
    });
    const raw = await app.inject({ url: '/raw-serialized' });
    expect(raw.body).toBe('{"status":"ok"}');
    expect(raw.headers['content-type']).toMatch(/^application\/json/);
  });
});
