import { ConfigValidationError, loadConfig } from '../../config/config.schema';

const SECRETS = { JWT_SECRET: 'x'.repeat(40), TENANT_ENCRYPTION_KEY: 'ab'.repeat(32) };

describe('proxy configuration (D7)', () => {
  it('should default to loopback port 8080, base domain localhost and following the service', () => {
    expect(loadConfig(SECRETS).proxy).toEqual({
      host: '127.0.0.1',
      port: 8080,
      upstream: 'http://127.0.0.1:8008',
      followService: true,
      baseDomain: 'localhost',
      tenantCacheTtlS: 30,
      tenantMissTtlS: 5,
    });
    expect(loadConfig({ ...SECRETS, NODE_ENV: 'production' }).proxy.host).toBe('0.0.0.0');
  });

  it("should reach the service at the service's own API_HOST and API_PORT (issue 20 #7)", () => {
    const upstream = (env: Record<string, string>) => loadConfig({ ...SECRETS, ...env }).proxy.upstream;
    expect(upstream({ API_PORT: '9000' })).toBe('http://127.0.0.1:9000');
    expect(upstream({ API_HOST: '0.0.0.0', API_PORT: '9000' })).toBe('http://127.0.0.1:9000');
    expect(upstream({ API_HOST: '::1' })).toBe('http://[::1]:8008');
    expect(upstream({ API_HOST: '::' })).toBe('http://[::1]:8008');
    expect(upstream({ API_HOST: '10.1.2.3', API_PORT: '9000' })).toBe('http://10.1.2.3:9000');
  });

  it('should take the PROXY_* variables', () => {
    const proxy = loadConfig({
      ...SECRETS,
      PROXY_HOST: '127.0.0.1',
      PROXY_PORT: '9090',
      PROXY_UPSTREAM: 'https://api.internal:8443/',
      PROXY_BASE_DOMAIN: '.App.Example.com',
      PROXY_TENANT_CACHE_TTL_S: '60',
      PROXY_TENANT_MISS_TTL_S: '0',
    }).proxy;
    expect(proxy).toEqual({
      host: '127.0.0.1',
      port: 9090,
      upstream: 'https://api.internal:8443',
      followService: false,
      baseDomain: 'app.example.com',
      tenantCacheTtlS: 60,
      tenantMissTtlS: 0,
    });
  });

  it('should name every bad PROXY_* variable', () => {
    let problems: string[] = [];
    try {
      loadConfig({
        ...SECRETS,
        PROXY_PORT: 'http',
        PROXY_UPSTREAM: 'localhost:8008',
        PROXY_BASE_DOMAIN: 'a b',
        PROXY_TENANT_CACHE_TTL_S: '-1',
        PROXY_HOST: 'http://0.0.0.0',
      });
    } catch (err) {
      if (!(err instanceof ConfigValidationError)) throw err;
      problems = err.problems;
    }
    expect(problems.map((p) => p.split(':')[0]).sort()).toEqual([
      'PROXY_BASE_DOMAIN',
      'PROXY_HOST',
      'PROXY_PORT',
      'PROXY_TENANT_CACHE_TTL_S',
      'PROXY_UPSTREAM',
    ]);
  });
});
