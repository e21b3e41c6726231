import { FOLLOW_TTL_MS, FollowedUpstream } from './followed-upstream';

describe(FollowedUpstream.name, () => {
  it('should forward to the recorded service, to the fallback while none runs, and read again after a second', () => {
    let recorded: string | undefined;
    let now = 0;
    let reads = 0;
    const upstream = new FollowedUpstream(
      'http://127.0.0.1:8008',
      () => {
        reads++;
        return recorded;
      },
      () => now,
    );
    expect(upstream.current()).toBe('http://127.0.0.1:8008');
    recorded = 'http://127.0.0.1:9000';
    now += FOLLOW_TTL_MS - 1;
    expect(upstream.current()).toBe('http://127.0.0.1:8008'); // not read again yet
    now += 1;
    expect(upstream.current()).toBe('http://127.0.0.1:9000');
    recorded = 'http://127.0.0.1:9001'; // restarted on another port
    now += FOLLOW_TTL_MS;
    expect(upstream.current()).toBe('http://127.0.0.1:9001');
    expect(reads).toBe(3);
  });

  it('should call the upstream the service of this directory only while one is recorded', () => {
    const record: { url?: string } = {};
    const upstream = new FollowedUpstream('http://127.0.0.1:8008', () => record.url);
    expect(upstream.describe()).toBe(
      'http://127.0.0.1:8008 (API_HOST:API_PORT: no service started in this directory is running; one that starts is followed)',
    );
    record.url = 'http://127.0.0.1:9000';
    expect(upstream.describe()).toBe('the service started in this directory (now http://127.0.0.1:9000)');
  });
});
