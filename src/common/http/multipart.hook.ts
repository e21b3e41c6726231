import multipart from '@fastify/multipart';
import type { FastifyInstance } from 'fastify';
import { unsupportedMediaType } from './json-body.hook';

/** The routes that take a `multipart/form-data` body: the import of a file (D53). */
export const MULTIPART_ROUTES: ReadonlySet<string> = new Set(['/api/v1/:entity_code/imports']);

/**
 * `multipart/form-data` (D53: an import's `file` part) through @fastify/multipart, read by the
 * route as a stream — never buffered — with at most one file of `maxBytes` (the file's stream then
 * fails with 413). Every other route refuses a multipart body with 415, as it refuses any body
 * but JSON (json-body.hook.ts), before its handler runs.
 */
export async function installMultipart(fastify: FastifyInstance, maxBytes: number): Promise<void> {
  await fastify.register(multipart, {
    limits: { fileSize: maxBytes, files: 1, fields: 20, fieldSize: 1024, parts: 21, headerPairs: 100 },
    throwFileSizeLimit: true,
  });
  fastify.addHook('preValidation', async (request) => {
    const route = request.routeOptions.url;
    if (route !== undefined && request.isMultipart() && !MULTIPART_ROUTES.has(route))
      throw unsupportedMediaType();
  });
}
