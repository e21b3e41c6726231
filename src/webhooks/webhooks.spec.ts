import { Webhook } from 'standardwebhooks';
import { matchesAny, parsePatterns } from './event-patterns';
import { newWebhookSecret, signatureHeaders } from './signature';
import { guardedLookup, isPrivateAddress, refusalOf, urlProblem } from './ssrf';
import { retryDelayMs } from './retry-delay';
import type { FieldError } from '../common/errors/app-error';

const STRICT = { refusePrivate: true, allowedHosts: [] as string[] };

describe('webhook signatures (Standard Webhooks)', () => {
  it('should make secrets of whsec_ and 32 random bytes', () => {
    const a = newWebhookSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(a.slice(6), 'base64')).toHaveLength(32);
    expect(newWebhookSecret()).not.toBe(a);
  });

  it('should sign so that the standardwebhooks verifier accepts it, and nothing tampered', () => {
    const secret = newWebhookSecret();
    const body = JSON.stringify({ type: 'customers.created', data: { recordId: 1 } });
    const now = Math.floor(Date.now() / 1000);
    const headers = signatureHeaders(secret, 'msg_1', now, body);
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(secret).verify(body + ' ', headers)).toThrow();
    expect(() => new Webhook(newWebhookSecret()).verify(body, headers)).toThrow();
    expect(() => new Webhook(secret).verify(body, { ...headers, 'webhook-id': 'msg_2' })).toThrow();
  });
});

describe('event patterns', () => {
  it.each([
    [['*'], 'customers.created', true],
    [['customers.*'], 'customers.deleted', true],
    [['customers.*'], 'orders.deleted', false],
    [['*.deleted'], 'orders.deleted', true],
    [['*.deleted'], 'orders.updated', false],
    [['orders.updated', 'customers.created'], 'customers.created', true],
  ])('%j matches %s: %s', (patterns, type, expected) => {
    expect(matchesAny(patterns, type)).toBe(expected);
  });

  it('should refuse what is not a pattern and name the entities to check', () => {
    const problems: FieldError[] = [];
    expect(parsePatterns(['customers.*', '*.deleted', 'orders.updated'], problems)).toEqual({
      patterns: ['customers.*', '*.deleted', 'orders.updated'],
      entities: ['customers', 'orders'],
    });
    expect(problems).toEqual([]);
    for (const bad of [[], 'x', ['customers'], ['customers.renamed'], ['a.b.c.*'], [1]]) {
      const p: FieldError[] = [];
      parsePatterns(bad, p);
      expect(p.length).toBeGreaterThan(0);
    }
  });
});

describe('retry schedule', () => {
  it('should follow the schedule with up to 20 % jitter, repeating its last delay', () => {
    const schedule = [5000, 300_000, 1_800_000];
    expect(retryDelayMs(schedule, 1, () => 0)).toBe(5000);
    expect(retryDelayMs(schedule, 1, () => 0.999)).toBeLessThanOrEqual(6000);
    expect(retryDelayMs(schedule, 2, () => 0)).toBe(300_000);
    expect(retryDelayMs(schedule, 7, () => 0)).toBe(1_800_000);
  });
});

describe('SSRF rules', () => {
  it.each([
    ['127.0.0.1', true],
    ['10.2.3.4', true],
    ['172.16.0.1', true],
    ['192.168.1.1', true],
    ['169.254.169.254', true],
    ['100.64.0.1', true],
    ['0.0.0.0', true],
    ['::1', true],
    ['fe80::1', true],
    ['fd00::1', true],
    ['::ffff:127.0.0.1', true],
    ['93.184.216.34', false],
    ['2606:4700::1111', false],
  ])('%s is private: %s', (address, expected) => {
    expect(isPrivateAddress(address)).toBe(expected);
  });

  it('should check the scheme, credentials and literal addresses of a URL, and allow listed hosts', () => {
    expect(urlProblem(STRICT, 'https://example.com/hook')).toBeUndefined();
    expect(urlProblem(STRICT, 'ftp://example.com/')).toMatch(/http or https/);
    expect(urlProblem(STRICT, 'not a url')).toMatch(/absolute/);
    expect(urlProblem(STRICT, 'http://u:p@example.com/')).toMatch(/credentials/);
    expect(urlProblem(STRICT, 'http://127.0.0.1:8080/')).toMatch(/private/);
    expect(urlProblem(STRICT, 'http://[::1]/')).toMatch(/private/);
    expect(urlProblem(STRICT, 'http://localhost/')).toMatch(/loopback/);
    expect(
      urlProblem({ refusePrivate: true, allowedHosts: ['127.0.0.1'] }, 'http://127.0.0.1:8080/'),
    ).toBeUndefined();
    expect(urlProblem({ refusePrivate: false, allowedHosts: [] }, 'http://10.0.0.1/')).toBeUndefined();
    expect(
      refusalOf({ refusePrivate: true, allowedHosts: ['hooks.internal'] }, 'hooks.internal', '10.0.0.5'),
    ).toBeUndefined();
  });

  it('should refuse, in the lookup of the connection itself, a name that resolves to a private address', async () => {
    const lookup = guardedLookup(STRICT, 'localhost');
    const err = await new Promise<Error | null>((resolve) =>
      lookup('localhost', { family: 0 }, (e) => resolve(e)),
    );
    expect(err?.name).toBe('SsrfRefusedError');
    const allowed = guardedLookup({ refusePrivate: true, allowedHosts: ['localhost'] }, 'localhost');
    const address = await new Promise<string>((resolve, reject) =>
      allowed('localhost', { family: 4 }, (e, a) => (e ? reject(e) : resolve(a as string))),
    );
    expect(address).toBe('127.0.0.1');
  });
});
