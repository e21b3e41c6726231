import { RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { ModulesContainer } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { RAW_RESPONSE } from '../decorators/public.decorator';
import { SerializedJson } from '../serialized-json';
import { Enveloped, serializedSuccessBody, successBody } from './envelope';

/** `METHOD /path/:param` as Fastify reports a matched route (request.routeOptions). */
export type RouteKey = string;

/** `/a/b` from path parts as controllers declare them (leading and trailing slashes dropped). */
export function routePath(...parts: string[]): string {
  return (
    '/' +
    parts
      .map((p) => p.replace(/^\/+|\/+$/g, ''))
      .filter(Boolean)
      .join('/')
  );
}

/**
 * The routes whose results are wrapped in `{success, data, meta}` (D16): every controller route
 * of the application except those marked @RawResponse() (probes, metrics). Read once from the
 * controllers' metadata; routes registered outside Nest (Swagger UI) are not in it.
 */
export function envelopedRoutes(app: NestFastifyApplication): Set<RouteKey> {
  const out = new Set<RouteKey>();
  for (const module of app.get(ModulesContainer).values()) {
    for (const wrapper of module.controllers.values()) {
      const type = wrapper.metatype as (new (...args: unknown[]) => unknown) | undefined;
      if (!type || Reflect.getMetadata(RAW_RESPONSE, type) === true) continue;
      const prefixes = ([] as string[]).concat((Reflect.getMetadata(PATH_METADATA, type) as string) ?? '');
      const proto = type.prototype as Record<string, unknown>;
      for (const name of Object.getOwnPropertyNames(proto)) {
        const handler = proto[name];
        if (name === 'constructor' || typeof handler !== 'function') continue;
        const paths = Reflect.getMetadata(PATH_METADATA, handler) as string | string[] | undefined;
        if (paths === undefined || Reflect.getMetadata(RAW_RESPONSE, handler) === true) continue;
        const method = RequestMethod[Reflect.getMetadata(METHOD_METADATA, handler) as number];
        for (const prefix of prefixes)
          for (const path of ([] as string[]).concat(paths)) out.add(`${method} ${routePath(prefix, path)}`);
      }
    }
  }
  return out;
}

/**
 * The success envelope (D16) as a Fastify preSerialization hook rather than a global Nest
 * interceptor: the same body, without the interceptor machinery (rxjs and an AsyncResource per
 * request), which cost about a fifth of the throughput of a cached entity read. Error bodies
 * (status ≥ 400) are built by the exception filter and pass through unchanged.
 */
export function installEnvelope(app: NestFastifyApplication, routes: Set<RouteKey>): void {
  app
    .getHttpAdapter()
    .getInstance()
    .addHook(
      'preSerialization',
      (
        request: FastifyRequest,
        reply: FastifyReply,
        payload: unknown,
        done: (err: null, payload: unknown) => void,
      ) => {
        if (reply.statusCode >= 400) return done(null, payload);
        const enveloped = routes.has(`${request.method} ${request.routeOptions.url ?? ''}`);
        if (payload instanceof SerializedJson) {
          // Already JSON text: spliced into the envelope as it is, and not serialized again.
          void reply.serializer(passThrough);
          return done(null, enveloped ? serializedSuccessBody(payload.text, request.id) : payload.text);
        }
        if (!enveloped) return done(null, payload);
        done(
          null,
          payload instanceof Enveloped
            ? successBody(payload.data, request.id, payload.extras)
            : successBody(payload ?? null, request.id),
        );
      },
    );
}

const passThrough = (text: unknown): string => text as string;
