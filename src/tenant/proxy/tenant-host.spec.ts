import { tenantCodeFromHost } from './tenant-host';

describe('tenantCodeFromHost (D7)', () => {
  it.each([
    ['acme.localhost', 'acme'],
    ['acme.localhost:8080', 'acme'],
    ['ACME.LocalHost:8080', 'acme'],
    ['acme.localhost.', 'acme'],
    ['globex-eu_2.localhost', 'globex-eu_2'],
  ])('should read %p as tenant %p', (host, code) => expect(tenantCodeFromHost(host, 'localhost')).toBe(code));

  it.each([
    [undefined],
    [''],
    ['localhost'],
    ['localhost:8080'],
    ['127.0.0.1:8080'],
    ['[::1]:8080'],
    ['.localhost'],
    ['www.acme.localhost'],
    ['acme.localhost.evil.test'],
    ['acmelocalhost'],
    ['acme.localhost:port'],
    ['-acme.localhost'],
    ['ac%6De.localhost'],
  ])('should find no tenant in %p', (host) => expect(tenantCodeFromHost(host, 'localhost')).toBeUndefined());

  it('should work under a multi-label base domain', () => {
    expect(tenantCodeFromHost('acme.app.example.com', 'app.example.com')).toBe('acme');
    expect(tenantCodeFromHost('acme.example.com', 'app.example.com')).toBeUndefined();
    expect(tenantCodeFromHost('app.example.com', 'app.example.com')).toBeUndefined();
  });
});
