import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  forgetServiceAddress,
  localUrlFor,
  readServiceAddress,
  recordServiceAddress,
} from './service-address';

describe('localUrlFor', () => {
  it.each([
    ['127.0.0.1', 'http://127.0.0.1:8008'],
    ['0.0.0.0', 'http://127.0.0.1:8008'],
    ['::', 'http://[::1]:8008'],
    ['::1', 'http://[::1]:8008'],
    ['localhost', 'http://localhost:8008'],
    ['10.1.2.3', 'http://10.1.2.3:8008'],
    ['fd00::5', 'http://[fd00::5]:8008'],
    ['api.internal', 'http://api.internal:8008'],
  ])('should reach a server bound to %s at %s', (host, url) => {
    expect(localUrlFor(host, 8008)).toBe(url);
  });
});

describe('the service address record (issue 20 #7)', () => {
  let dir: string;
  let file: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'service-address-'));
    file = join(dir, 'data', '.service.json');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('should read back what this process recorded, and forget it', () => {
    expect(readServiceAddress(file)).toBeUndefined();
    recordServiceAddress('http://127.0.0.1:9123', file);
    expect(readServiceAddress(file)).toEqual({ url: 'http://127.0.0.1:9123', pid: process.pid });
    forgetServiceAddress(file);
    expect(readServiceAddress(file)).toBeUndefined();
  });

  it("should ignore the record of a process that no longer runs, and not forget another process's", () => {
    recordServiceAddress('http://127.0.0.1:9123', file);
    const other = { url: 'http://127.0.0.1:9124', pid: 2 ** 22 + 12345 };
    writeFileSync(file, JSON.stringify(other));
    expect(readServiceAddress(file)).toBeUndefined(); // no such process
    forgetServiceAddress(file);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(other);
  });

  it.each([
    '{',
    '{"url":"ftp://x:1","pid":1}',
    '{"url":"http://x:1/path","pid":1}',
    '{"url":"http://x:1","pid":-1}',
  ])('should treat %s as no record', (text) => {
    recordServiceAddress('http://127.0.0.1:1', file);
    writeFileSync(file, text);
    expect(readServiceAddress(file)).toBeUndefined();
  });
});
