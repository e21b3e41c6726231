import { Inject, Injectable, Logger, Module, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import { existsSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { APP_CONFIG } from '../config/config.module';
import type { AppConfig } from '../config/config.schema';

/** Where `node web/build.js` (run by scripts/build-if-stale.js) writes the bundled page. */
export const DEV_UI_DIR = join(__dirname, '..', '..', 'dist', 'web');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
};

interface Asset {
  type: string;
  path: string;
}

/** The files of the built page: `/` is index.html, the rest under `/ui/<name>`. */
export function readDevUiAssets(dir: string): Map<string, Asset> | undefined {
  if (!existsSync(join(dir, 'index.html'))) return undefined;
  const assets = new Map<string, Asset>();
  for (const name of readdirSync(dir)) {
    const type = TYPES[extname(name)];
    if (!type) continue;
    assets.set(name === 'index.html' ? '/' : `/ui/${name}`, { type, path: join(dir, name) });
  }
  return assets;
}

/**
 * The reference SPA (issue 15) at `/`, in development only: with NODE_ENV=production nothing is
 * registered and `/` keeps the 404 envelope. Plain Fastify routes for the handful of files found at
 * start-up (no plugin, no hook): API requests never reach them, and as routes outside Nest they pass
 * the readiness gate and CORS like every request but are neither guarded nor enveloped. Each file is
 * read when asked for, so a rebuilt page (`npm run build`) shows on reload without a restart.
 */
@Injectable()
export class DevUiService implements OnModuleInit {
  private readonly logger = new Logger('DevUi');

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    if (this.config.nodeEnv === 'production') return;
    const assets = readDevUiAssets(DEV_UI_DIR);
    if (!assets) {
      this.logger.warn(`Reference page not built (${DEV_UI_DIR}): run npm run build`);
      return;
    }
    const fastify = this.adapterHost.httpAdapter.getInstance<FastifyInstance>();
    for (const [url, asset] of assets) {
      fastify.get(url, async (_request, reply) =>
        reply
          .header('content-type', asset.type)
          .header('cache-control', 'no-cache')
          .header('x-content-type-options', 'nosniff')
          .send(await readFile(asset.path)),
      );
    }
  }
}

@Module({ providers: [DevUiService] })
export class DevUiModule {}
