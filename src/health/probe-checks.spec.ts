import { SingleFlight } from './probe-checks';

describe(SingleFlight.name, () => {
  let now = 0;
  let calls = 0;
  let release: Array<(v: number) => void> = [];

  beforeEach(() => {
    now = 1_000_000;
    epoch = 0;
    calls = 0;
    release = [];
  });

  let epoch = 0;
  const flight = () =>
    new SingleFlight<number>(
      () => {
        calls++;
        return new Promise<number>((r) => release.push(r));
      },
      1000,
      () => epoch,
      () => now,
    );

  it('should share one call among concurrent callers', async () => {
    const f = flight();
    const all = Promise.all(Array.from({ length: 100 }, () => f.get()));
    expect(calls).toBe(1);
    release[0](7);
    expect(await all).toEqual(Array<number>(100).fill(7));
  });

  it('should answer from memory for a second after the result, then compute again', async () => {
    const f = flight();
    const first = f.get();
    release[0](1);
    await first;
    now += 999;
    expect(await f.get()).toBe(1);
    expect(calls).toBe(1);
    now += 1;
    const second = f.get();
    expect(calls).toBe(2);
    release[1](2);
    expect(await second).toBe(2);
  });

  it('should count the second from when the result came, not from when the call started', async () => {
    const f = flight();
    const first = f.get();
    now += 5000; // a slow check
    release[0](1);
    await first;
    now += 500;
    expect(await f.get()).toBe(1);
    expect(calls).toBe(1);
  });

  it('should compute again at once when the epoch (the readiness flags) changed', async () => {
    const f = flight();
    const first = f.get();
    release[0](1);
    await first;
    epoch++;
    const second = f.get();
    expect(calls).toBe(2);
    // A call in flight from before a change is not joined either.
    epoch++;
    const third = f.get();
    expect(calls).toBe(3);
    release[1](2);
    release[2](3);
    expect([await second, await third]).toEqual([2, 3]);
    expect(await f.get()).toBe(3);
    expect(calls).toBe(3);
  });
});
