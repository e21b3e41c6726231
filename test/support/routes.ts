import { RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { ModulesContainer } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { NO_TENANT, REQUIRED_PERMISSION } from '../../src/common/decorators/context.decorators';
import { IS_PUBLIC } from '../../src/common/decorators/public.decorator';

export interface RouteInfo {
  method: string;
  /** OpenAPI-style path, e.g. /api/v1/{entity_code} */
  path: string;
  controller: string;
  handler: string;
  isPublic: boolean;
  noTenant: boolean;
  permission: string | undefined;
}

function join(...parts: string[]): string {
  const p =
    '/' +
    parts
      .map((x) => x.replace(/^\/+|\/+$/g, ''))
      .filter(Boolean)
      .join('/');
  return p.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

/** Every route the app registers, read from the controllers' metadata (the default-deny walk). */
export function listRoutes(app: NestFastifyApplication): RouteInfo[] {
  const routes: RouteInfo[] = [];
  for (const module of app.get(ModulesContainer).values()) {
    for (const wrapper of module.controllers.values()) {
      const type = wrapper.metatype as (new (...a: unknown[]) => unknown) | undefined;
      if (!type) continue;
      const prefixes = ([] as string[]).concat(Reflect.getMetadata(PATH_METADATA, type) ?? '');
      const proto = type.prototype as Record<string, unknown>;
      for (const name of Object.getOwnPropertyNames(proto)) {
        const fn = proto[name];
        if (name === 'constructor' || typeof fn !== 'function') continue;
        const paths: string | string[] | undefined = Reflect.getMetadata(PATH_METADATA, fn);
        if (paths === undefined) continue;
        const method = RequestMethod[Reflect.getMetadata(METHOD_METADATA, fn) as number];
        const meta = (key: string): unknown => Reflect.getMetadata(key, fn) ?? Reflect.getMetadata(key, type);
        for (const prefix of prefixes) {
          for (const path of ([] as string[]).concat(paths)) {
            routes.push({
              method,
              path: join(prefix, path),
              controller: type.name,
              handler: name,
              isPublic: meta(IS_PUBLIC) === true,
              noTenant: meta(NO_TENANT) === true,
              permission: meta(REQUIRED_PERMISSION) as string | undefined,
            });
          }
        }
      }
    }
  }
  return routes;
}
