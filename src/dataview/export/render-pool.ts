import { extname, join } from 'node:path';
import type { AppConfig } from '../../config/config.schema';
import { ThreadPool } from '../../jobs/threads/thread-pool';

export type RenderPool = ThreadPool;
export const EXPORT_RENDER_POOL = Symbol('EXPORT_RENDER_POOL');

/** An idle render thread is ended after this long, so an instance that exports rarely holds none. */
const IDLE_MS = 60_000;

/**
 * The render threads of this instance (issue 21 #1): EXPORT_RENDER_THREADS of them, each running
 * render.worker (the .js of the build, or the .ts sources under jest). A thread's heap is bounded,
 * so a runaway render ends its own thread (the job fails), not the process.
 */
export function createRenderPool(config: AppConfig): RenderPool {
  return new ThreadPool(join(__dirname, `render.worker${extname(__filename)}`), {
    size: config.exports.renderThreads,
    idleMs: IDLE_MS,
    resourceLimits: { maxOldGenerationSizeMb: 128 },
    name: 'ExportRenderPool',
  });
}
