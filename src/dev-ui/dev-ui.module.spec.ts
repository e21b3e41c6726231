import type { HttpAdapterHost } from '@nestjs/core';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AppConfig } from '../config/config.schema';
import { DevUiService, readDevUiAssets } from './dev-ui.module';

describe('dev UI (reference page)', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'dev-ui-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('maps index.html to / and the other known files under /ui/', () => {
    writeFileSync(join(dir, 'index.html'), '<!doctype html>');
    writeFileSync(join(dir, 'app.js'), 'void 0');
    writeFileSync(join(dir, 'app.css'), 'body{}');
    writeFileSync(join(dir, '.build-stamp'), '3');
    const assets = readDevUiAssets(dir)!;
    expect([...assets.keys()].sort()).toEqual(['/', '/ui/app.css', '/ui/app.js']);
    expect(assets.get('/')!.type).toBe('text/html; charset=utf-8');
    expect(assets.get('/ui/app.js')!.path).toBe(join(dir, 'app.js'));
  });

  it('is not built: nothing to serve', () => {
    expect(readDevUiAssets(dir)).toBeUndefined();
  });

  it('registers no route in production', () => {
    const get = jest.fn();
    const host = { httpAdapter: { getInstance: () => ({ get }) } } as unknown as HttpAdapterHost;
    new DevUiService(host, { nodeEnv: 'production' } as AppConfig).onModuleInit();
    expect(get).not.toHaveBeenCalled();
  });
});
