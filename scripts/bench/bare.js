#!/usr/bin/env node
'use strict';
/**
 * The baseline: plain Fastify (no plugins, no hooks, logger off) answering, per scenario, the
 * exact bytes the service answered (status, content-type, body), from memory, on the scenario's
 * route pattern. One Fastify instance per scenario, each on a port of its own, so scenarios that
 * share a route (the cached and the uncached list) still answer their own bytes. JSON request
 * bodies are parsed, as any Fastify route would. The orchestrator sends { scenarios: [{ id, method,
 * route, status, contentType, bodyBase64 }] } over IPC and gets { ports: { id: port } } back.
 */
const Fastify = require('fastify');

process.once('message', async ({ scenarios }) => {
  try {
    const ports = {};
    for (const s of scenarios) {
      const app = Fastify({ logger: false });
      const body = Buffer.from(s.bodyBase64, 'base64');
      app.route({
        method: s.method,
        url: s.route,
        handler: (_request, reply) => {
          reply.code(s.status).header('content-type', s.contentType).send(body);
        },
      });
      await app.listen({ port: 0, host: '127.0.0.1' });
      ports[s.id] = app.server.address().port;
    }
    process.send({ ports });
  } catch (err) {
    process.send({ error: String(err.stack ?? err) });
  }
});
process.on('disconnect', () => process.exit(0));
