import { Logger } from '@nestjs/common';
import { Worker, type ResourceLimits } from 'node:worker_threads';

/**
 * Starts a worker on `entry`. From the build (dist/, `.js`) that is plain `new Worker(entry)`. When
 * the service runs from its TypeScript sources (jest), the thread gets a require hook that
 * transpiles `.ts` with the `typescript` package (present wherever the sources are), since a
 * worker thread does not inherit the parent's transform.
 */
function spawn(entry: string, resourceLimits: ResourceLimits | undefined): Worker {
  if (!entry.endsWith('.ts')) return new Worker(entry, { resourceLimits });
  const bootstrap = `
    const { readFileSync } = require('node:fs');
    const { workerData } = require('node:worker_threads');
    const ts = require(require.resolve('typescript', { paths: [workerData.entry] }));
    const options = { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true };
    require.extensions['.ts'] = (module, file) =>
      module._compile(ts.transpileModule(readFileSync(file, 'utf8'), { fileName: file, compilerOptions: options }).outputText, file);
    require(workerData.entry);
  `;
  return new Worker(bootstrap, { eval: true, workerData: { entry }, resourceLimits });
}

/** A thread lent to one caller until it calls release() (or discard(), when it left the thread unusable). */
export interface ThreadLease {
  readonly worker: Worker;
  release(): void;
  /** Terminates the thread (an aborted or failed session); the pool starts a new one when needed. */
  discard(): void;
}

interface Slot {
  worker: Worker;
  busy: boolean;
  idleTimer?: NodeJS.Timeout;
}

export interface ThreadPoolOptions {
  /** Threads at most. */
  size: number;
  /** An idle thread is ended after this long (its memory goes back to the system). */
  idleMs: number;
  /** V8 heap bounds of each thread: a runaway job ends its own thread, not the process. */
  resourceLimits?: ResourceLimits;
  name: string;
}

/**
 * A small pool of worker threads running one module (`entry`), each lent to one caller at a time:
 * the caller talks to its thread over its own MessageChannel for as long as a job takes (a
 * streamed session, not a request/response task). Threads start on demand, end when idle, and are
 * replaced when one dies; callers beyond `size` wait in order. Threads are unref'd, so an idle pool
 * never keeps the process alive, and `destroy()` ends them all (application shutdown).
 */
export class ThreadPool {
  private readonly logger: Logger;
  private readonly slots = new Set<Slot>();
  private readonly waiting: Array<{ resolve: (lease: ThreadLease) => void; reject: (err: unknown) => void }> =
    [];
  private destroyed = false;

  constructor(
    private readonly entry: string,
    private readonly options: ThreadPoolOptions,
  ) {
    this.logger = new Logger(options.name);
  }

  get size(): number {
    return this.options.size;
  }

  /** Threads lent out now. */
  get busy(): number {
    return [...this.slots].filter((s) => s.busy).length;
  }

  /** A thread for the caller: a free one, a new one while below `size`, else the next one released. */
  acquire(signal?: AbortSignal): Promise<ThreadLease> {
    if (this.destroyed) return Promise.reject(new Error('The thread pool is shut down'));
    signal?.throwIfAborted();
    const free = [...this.slots].find((s) => !s.busy);
    if (free) return Promise.resolve(this.lend(free));
    if (this.slots.size < this.options.size) return Promise.resolve(this.lend(this.start()));
    return new Promise<ThreadLease>((resolve, reject) => {
      const entry = { resolve, reject };
      this.waiting.push(entry);
      signal?.addEventListener(
        'abort',
        () => {
          const i = this.waiting.indexOf(entry);
          if (i >= 0) this.waiting.splice(i, 1);
          reject(signal.reason instanceof Error ? signal.reason : new Error('Aborted'));
        },
        { once: true },
      );
    });
  }

  /** Ends every thread; waiting callers are refused. */
  async destroy(): Promise<void> {
    this.destroyed = true;
    for (const w of this.waiting.splice(0)) w.reject(new Error('The thread pool is shut down'));
    await Promise.all([...this.slots].map((s) => this.end(s)));
  }

  private start(): Slot {
    const worker = spawn(this.entry, this.options.resourceLimits);
    const slot: Slot = { worker, busy: false };
    worker.unref();
    worker.on('error', (err) => this.logger.warn({ err: err.message }, 'A worker thread failed'));
    worker.once('exit', () => {
      this.slots.delete(slot);
      if (slot.idleTimer) clearTimeout(slot.idleTimer);
      this.handOver();
    });
    this.slots.add(slot);
    return slot;
  }

  private lend(slot: Slot): ThreadLease {
    slot.busy = true;
    if (slot.idleTimer) clearTimeout(slot.idleTimer);
    let done = false;
    return {
      worker: slot.worker,
      release: () => {
        if (done) return;
        done = true;
        slot.busy = false;
        if (!this.slots.has(slot)) return;
        slot.idleTimer = setTimeout(() => void this.end(slot), this.options.idleMs);
        slot.idleTimer.unref();
        this.handOver();
      },
      discard: () => {
        if (done) return;
        done = true;
        void this.end(slot);
      },
    };
  }

  /** Gives a free (or new) thread to the longest waiting caller. */
  private handOver(): void {
    if (this.destroyed || this.waiting.length === 0) return;
    const free = [...this.slots].find((s) => !s.busy);
    const slot = free ?? (this.slots.size < this.options.size ? this.start() : undefined);
    if (slot) this.waiting.shift()!.resolve(this.lend(slot));
  }

  private async end(slot: Slot): Promise<void> {
    if (slot.idleTimer) clearTimeout(slot.idleTimer);
    this.slots.delete(slot);
    await slot.worker.terminate().catch(() => undefined);
    this.handOver();
  }
}
