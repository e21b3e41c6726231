import { errorMessage } from '../../common/errors/error-message';
import { Writable } from 'node:stream';
import { parentPort, type MessagePort } from 'node:worker_threads';
import type { Row } from '../../records/records-read.repository';
import type { ExportInput } from './export-model';
import type { FromRenderer, SessionStart, ToRenderer } from './render-protocol';
import { RENDERERS } from './renderers';

/**
 * A render thread (issue 21 #1): runs the same renderers as before, one session at a time, off the
 * main event loop. Rows arrive batch by batch over the session's port; the file leaves in chunks.
 */

/** The port's messages, one `receive()` at a time. */
function inbox(port: MessagePort): () => Promise<ToRenderer> {
  const queued: ToRenderer[] = [];
  let waiter: ((m: ToRenderer) => void) | undefined;
  port.on('message', (m: ToRenderer) => {
    if (waiter) {
      const w = waiter;
      waiter = undefined;
      w(m);
    } else queued.push(m);
  });
  return () =>
    queued.length > 0 ? Promise.resolve(queued.shift()!) : new Promise((resolve) => (waiter = resolve));
}

async function session(start: SessionStart): Promise<void> {
  const { port } = start;
  const send = (m: FromRenderer) => port.postMessage(m);
  const receive = inbox(port);
  let aggregates: Record<string, unknown> = {};
  async function* batches(): AsyncGenerator<Row[]> {
    for (;;) {
      send({ type: 'next' });
      const m = await receive();
      if (m.type === 'end') {
        aggregates = m.aggregates ?? {};
        return;
      }
      yield m.rows;
    }
  }
  const out = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      send({ type: 'chunk', data: chunk });
      callback();
    },
  });
  const input: ExportInput = {
    columns: start.columns,
    meta: start.meta,
    batches: batches(),
    written: { rows: 0 },
    ...(start.hasAggregates ? { aggregates: async () => aggregates } : {}),
  };
  try {
    await RENDERERS[start.format].render(input, out);
    send({ type: 'done', rows: input.written.rows });
  } catch (err) {
    send({ type: 'error', message: errorMessage(err) });
  } finally {
    port.close();
  }
}

parentPort?.on('message', (m: SessionStart) => {
  if (m?.type === 'session') void session(m);
});
