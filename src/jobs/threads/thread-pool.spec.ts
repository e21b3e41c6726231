import { join } from 'node:path';
import { MessageChannel } from 'node:worker_threads';
import { ThreadLease, ThreadPool } from './thread-pool';

const ENTRY = join(__dirname, '../../../test/support/echo.worker.ts');

/** One session with a leased thread: the echo worker's answer. */
async function echo(lease: ThreadLease, text: string): Promise<{ text: string; thread: number }> {
  const { port1, port2 } = new MessageChannel();
  const answer = new Promise<{ text: string; thread: number }>((resolve) => port1.once('message', resolve));
  lease.worker.postMessage({ port: port2, text }, [port2]);
  const result = await answer;
  port1.close();
  return result;
}

describe(ThreadPool.name, () => {
  let pool: ThreadPool;

  afterEach(async () => {
    await pool?.destroy();
  });

  it('should run the module in a thread of its own, from the TypeScript sources too', async () => {
    pool = new ThreadPool(ENTRY, { size: 2, idleMs: 10_000, name: 'test' });
    const lease = await pool.acquire();
    expect(await echo(lease, 'abc')).toEqual({ text: 'ABC', thread: expect.any(Number) });
    expect(pool.busy).toBe(1);
    lease.release();
    expect(pool.busy).toBe(0);
  });

  it('should lend at most `size` threads and hand a released one to the caller who waited longest', async () => {
    pool = new ThreadPool(ENTRY, { size: 2, idleMs: 10_000, name: 'test' });
    const a = await pool.acquire();
    const b = await pool.acquire();
    const order: string[] = [];
    const c = pool.acquire().then((l) => (order.push('c'), l));
    const d = pool.acquire().then((l) => (order.push('d'), l));
    await new Promise((r) => setTimeout(r, 50));
    expect(order).toEqual([]);
    const aThread = (await echo(a, 'x')).thread;
    a.release();
    const leaseC = await c;
    expect((await echo(leaseC, 'y')).thread).toBe(aThread);
    b.release();
    const leaseD = await d;
    expect(order).toEqual(['c', 'd']);
    leaseC.release();
    leaseD.release();
  });

  it('should replace a discarded or dead thread, and let an aborted wait go', async () => {
    pool = new ThreadPool(ENTRY, { size: 1, idleMs: 10_000, name: 'test' });
    const first = await pool.acquire();
    const firstThread = (await echo(first, 'a')).thread;
    const controller = new AbortController();
    const waiting = pool.acquire(controller.signal);
    controller.abort(new Error('no longer needed'));
    await expect(waiting).rejects.toThrow('no longer needed');
    first.discard();
    const second = await pool.acquire();
    expect((await echo(second, 'b')).thread).not.toBe(firstThread);
    const exited = new Promise((r) => second.worker.once('exit', r));
    second.worker.postMessage({ crash: true });
    expect(await exited).toBe(3);
    const third = await pool.acquire();
    expect((await echo(third, 'c')).text).toBe('C');
    third.release();
  });

  it('should end an idle thread after idleMs and refuse callers once destroyed', async () => {
    pool = new ThreadPool(ENTRY, { size: 1, idleMs: 50, name: 'test' });
    const lease = await pool.acquire();
    const exited = new Promise((r) => lease.worker.once('exit', r));
    lease.release();
    await exited;
    await pool.destroy();
    await expect(pool.acquire()).rejects.toThrow('shut down');
  });
});
