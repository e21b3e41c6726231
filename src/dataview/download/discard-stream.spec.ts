import { once } from 'node:events';
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { discardStream } from './discard-stream';

describe('discardStream', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'discard-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** A file stream destroyed while a vectored write is in flight, as when an export is cancelled. */
  async function busyFileStream(name: string) {
    const out = createWriteStream(join(dir, name));
    await once(out, 'open');
    for (let i = 0; i < 50; i++) out.write(Buffer.alloc(64 * 1024));
    // Let the first write finish so the buffered chunks go out in one writev, then abandon it.
    await new Promise((r) => setImmediate(r));
    return out;
  }

  it('should close a file stream abandoned mid-write without an uncaught error', async () => {
    const uncaught: Error[] = [];
    const onUncaught = (err: Error) => uncaught.push(err);
    process.prependListener('uncaughtException', onUncaught);
    try {
      const out = await busyFileStream('a');
      await discardStream(out);
      expect(out.closed).toBe(true);
      await new Promise((r) => setTimeout(r, 50));
      expect(uncaught).toEqual([]);
    } finally {
      process.off('uncaughtException', onUncaught);
    }
  });

  it('shows why it is needed: a bare destroy() emits the in-flight write as an error', async () => {
    const out = await busyFileStream('b');
    const errored = once(out, 'error');
    out.destroy();
    const [err] = (await errored) as [NodeJS.ErrnoException];
    expect(err.code).toBe('ERR_STREAM_DESTROYED');
  });
});
