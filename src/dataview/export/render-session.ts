import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { MessageChannel } from 'node:worker_threads';
import type { ThreadPool } from '../../jobs/threads/thread-pool';
import type { ExportFormat, ExportInput } from './export-model';
import type { FromRenderer, SessionStart, ToRenderer } from './render-protocol';

function asError(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error(String(reason));
}

/**
 * Renders `input` as `format` into `out` in a thread of `pool` (issue 21 #1): the main thread only
 * reads the batches (the records core, as before) and writes the chunks the thread sends back to
 * the export store, waiting for the store whenever it asks to (backpressure), before it hands the
 * thread its next batch. An abort (`signal`: cancel, a lost lease, shutdown) or a dead thread ends
 * the session at once; the thread is then discarded, the batch stream closed.
 */
export async function renderInThread(
  pool: ThreadPool,
  format: ExportFormat,
  input: ExportInput,
  out: Writable,
  signal: AbortSignal,
): Promise<void> {
  const lease = await pool.acquire(signal);
  const { port1, port2 } = new MessageChannel();
  const rows = input.batches[Symbol.asyncIterator]();
  let finished = false;
  try {
    await new Promise<void>((resolveSession, rejectSession) => {
      let chain = Promise.resolve();
      // Once the session has ended (done, failed, aborted), messages still queued are dropped: the
      // store may already have destroyed `out`, and nothing more may be read or written.
      let settled = false;
      const resolve = () => {
        settled = true;
        resolveSession();
      };
      const reject = (err: Error) => {
        settled = true;
        rejectSession(err);
      };
      const send = (m: ToRenderer) => port1.postMessage(m);
      const onAbort = () => reject(asError(signal.reason));
      const onExit = () => reject(new Error('The render thread stopped'));
      signal.addEventListener('abort', onAbort, { once: true });
      lease.worker.once('exit', onExit);
      const cleanup = () => {
        signal.removeEventListener('abort', onAbort);
        lease.worker.off('exit', onExit);
      };
      const handle = async (m: FromRenderer): Promise<void> => {
        if (settled || out.destroyed) return;
        switch (m.type) {
          case 'chunk':
            if (!out.write(Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength)))
              await once(out, 'drain', { signal });
            return;
          case 'next': {
            const next = await rows.next();
            if (next.done)
              send({ type: 'end', aggregates: input.aggregates ? await input.aggregates() : undefined });
            else send({ type: 'batch', rows: next.value });
            return;
          }
          case 'done':
            input.written.rows = m.rows;
            cleanup();
            resolve();
            return;
          case 'error':
            throw new Error(`Rendering failed: ${m.message}`);
        }
      };
      // One message at a time, in order: a chunk's write (and its wait for the store) completes
      // before the next batch is read and sent.
      port1.on('message', (m: FromRenderer) => {
        chain = chain
          .then(() => handle(m))
          .catch((err: unknown) => {
            cleanup();
            reject(asError(err));
          });
      });
      const start: SessionStart = {
        type: 'session',
        port: port2,
        format,
        columns: input.columns,
        meta: input.meta,
        hasAggregates: input.aggregates !== undefined,
      };
      lease.worker.postMessage(start, [port2]);
    });
    finished = true;
  } finally {
    port1.close();
    if (finished) lease.release();
    else {
      lease.discard();
      await rows.return?.(undefined);
    }
  }
}
