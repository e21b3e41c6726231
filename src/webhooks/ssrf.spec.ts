import type { LookupAddress } from 'node:dns';
import { loadConfig } from '../config/config.schema';
import { embeddedIpv4, guardedLookup, isPrivateAddress, type Resolver, urlProblem } from './ssrf';

const STRICT = { refusePrivate: true, allowedHosts: [] as string[] };
const SECRETS = { JWT_SECRET: 'x'.repeat(40), TENANT_ENCRYPTION_KEY: 'ab'.repeat(32) };

/** A resolver that answers every name with the given addresses. */
const resolvingTo =
  (...addresses: string[]): Resolver =>
  (_name, _options, callback) =>
    callback(
      null,
      addresses.map((address): LookupAddress => ({ address, family: address.includes(':') ? 6 : 4 })),
    );

const lookupError = (resolve: Resolver, host = 'hooks.example.com') =>
  new Promise<Error | null>((done) =>
    guardedLookup(STRICT, host, resolve)(host, { family: 0 }, (err) => done(err)),
  );

describe('SSRF rules for IPv6 addresses that carry an IPv4 one (issue 34 #5)', () => {
  it.each([
    ['::127.0.0.1', '127.0.0.1'],
    ['::7f00:1', '127.0.0.1'],
    ['::ffff:7f00:1', '127.0.0.1'],
    ['64:ff9b::7f00:1', '127.0.0.1'],
    ['64:ff9b::10.1.2.3', '10.1.2.3'],
    ['2002:a9fe:a9fe::1', '169.254.169.254'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', '192.0.2.45'],
    ['2606:4700::1111', undefined],
  ])('should read %s as carrying %s', (address, v4) => {
    expect(embeddedIpv4(address)).toBe(v4);
  });

  it.each([
    ['::127.0.0.1', true],
    ['::10.0.0.1', true],
    ['64:ff9b::7f00:1', true],
    ['64:ff9b::a9fe:a9fe', true],
    ['64:ff9b:1::1', true],
    ['2002:7f00:1::', true],
    ['2002:c0a8:101::1', true],
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', true],
    ['fe80::1%eth0', true],
    ['64:ff9b::5db8:d822', false],
    ['2002:5db8:d822::1', false],
    ['::ffff:93.184.216.34', false],
  ])('%s is private: %s', (address, expected) => {
    expect(isPrivateAddress(address)).toBe(expected);
  });

  it.each([
    'http://[::127.0.0.1]:8080/hook',
    'http://[64:ff9b::7f00:1]/',
    'http://[2002:7f00:1::]/',
    'http://[::ffff:7f00:1]/',
  ])('should refuse %s as a webhook URL', (url) => {
    expect(urlProblem(STRICT, url)).toMatch(/private address/);
  });

  it('should refuse a name that resolves to an IPv4-compatible or NAT64 form of a private address', async () => {
    expect((await lookupError(resolvingTo('::127.0.0.1')))?.name).toBe('SsrfRefusedError');
    expect((await lookupError(resolvingTo('64:ff9b::a9fe:a9fe')))?.name).toBe('SsrfRefusedError');
    expect((await lookupError(resolvingTo('93.184.216.34', '2002:a00:1::1')))?.name).toBe('SsrfRefusedError');
    expect(await lookupError(resolvingTo('93.184.216.34', '64:ff9b::5db8:d822'))).toBeNull();
  });
});

describe('when private addresses are refused (issue 34 #5)', () => {
  it.each([
    ['NODE_ENV unset', {}, true],
    ['NODE_ENV empty', { NODE_ENV: '' }, true],
    ['NODE_ENV=production', { NODE_ENV: 'production' }, true],
    ['NODE_ENV=test', { NODE_ENV: 'test' }, true],
    ['NODE_ENV=development', { NODE_ENV: 'development' }, false],
  ])('with %s the guard is on: %s', (_name, env, refuses) => {
    expect(loadConfig({ ...SECRETS, ...env }).webhooks.refusePrivate).toBe(refuses);
  });
});
