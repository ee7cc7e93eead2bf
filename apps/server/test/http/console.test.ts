import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliCompressSync, brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONSOLE_CSP } from '../../src/http/console.js';
import { createTestApp, type TestApp } from '../helpers/app.js';

// A console build laid out as its build writes it: index.html, content-hashed files under
// assets/, and the brotli and gzip forms beside the script (scripts/compress.mjs); the
// stylesheet has none, as a build without that step would leave it.
const INDEX = '<!doctype html><html><head><script type="module" src="/assets/index-abc123.js"></script></head><body><div id="root"></div></body></html>';
const SCRIPT = `console.log(${JSON.stringify('x'.repeat(4000))});`;
const STYLE = `main { color: #123; }\n${'.a { margin: 0; }\n'.repeat(100)}`;

describe('the web console at / (http/console.ts)', () => {
  let t: TestApp;
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-console-'));
    await mkdir(join(dir, 'assets'));
    await writeFile(join(dir, 'index.html'), INDEX);
    await writeFile(join(dir, 'assets', 'index-abc123.js'), SCRIPT);
    await writeFile(join(dir, 'assets', 'index-abc123.js.br'), brotliCompressSync(SCRIPT));
    await writeFile(join(dir, 'assets', 'index-abc123.js.gz'), gzipSync(SCRIPT));
    await writeFile(join(dir, 'assets', 'index-def456.css'), STYLE);
    await writeFile(join(dir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
    t = await createTestApp('pglite', { ctxOverrides: { consoleDir: dir } });
  });
  afterAll(async () => {
    await t?.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  it('serves index.html at / and for every client route, revalidated, with a strict CSP', async () => {
    for (const url of ['/', '/devices', '/devices/gw-0001?tab=history', '/rollouts/6f1c/transaction', '/..%2f..%2fetc%2fpasswd']) {
      const res = await t.app.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(200);
      expect(res.body, url).toBe(INDEX);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.headers['cache-control']).toBe('no-cache');
      expect(res.headers['content-security-policy']).toBe(CONSOLE_CSP);
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['x-frame-options']).toBe('DENY');
    }
    expect(CONSOLE_CSP).toContain("script-src 'self'");
    expect(CONSOLE_CSP).not.toContain('unsafe-inline');
    expect(CONSOLE_CSP).toContain("frame-ancestors 'none'");
    const head = await t.app.inject({ method: 'HEAD', url: '/' });
    expect(head.statusCode).toBe(200);
  });

  it('answers 304 to a matching If-None-Match', async () => {
    const first = await t.app.inject({ method: 'GET', url: '/' });
    const again = await t.app.inject({ method: 'GET', url: '/', headers: { 'if-none-match': first.headers.etag as string } });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe('');
  });

  it('caches hashed assets for a year and compresses them (br, then gzip, else identity)', async () => {
    const br = await t.app.inject({ method: 'GET', url: '/assets/index-abc123.js', headers: { 'accept-encoding': 'gzip, deflate, br' } });
    expect(br.statusCode).toBe(200);
    expect(br.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(br.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(br.headers['content-encoding']).toBe('br');
    expect(br.headers.vary).toBe('accept-encoding');
    expect(brotliDecompressSync(br.rawPayload).toString()).toBe(SCRIPT);
    const gz = await t.app.inject({ method: 'GET', url: '/assets/index-abc123.js', headers: { 'accept-encoding': 'gzip' } });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gz.rawPayload).toString()).toBe(SCRIPT);
    const plain = await t.app.inject({ method: 'GET', url: '/assets/index-abc123.js' });
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.body).toBe(SCRIPT);
    // without precompressed forms: gzip made at start, no brotli
    const css = await t.app.inject({ method: 'GET', url: '/assets/index-def456.css', headers: { 'accept-encoding': 'br, gzip' } });
    expect(css.headers['content-type']).toBe('text/css; charset=utf-8');
    expect(css.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(css.rawPayload).toString()).toBe(STYLE);
    // the precompressed files are not URLs of their own
    expect((await t.app.inject({ method: 'GET', url: '/assets/index-abc123.js.br' })).statusCode).toBe(404);
    const icon = await t.app.inject({ method: 'GET', url: '/favicon.svg' });
    expect(icon.headers['content-type']).toBe('image/svg+xml');
    expect(icon.headers['cache-control']).toBe('no-cache');
  });

  it('a missing asset is 404, not index.html; unknown /api paths keep the JSON 404; the API is unchanged', async () => {
    const asset = await t.app.inject({ method: 'GET', url: '/assets/index-gone.js' });
    expect(asset.statusCode).toBe(404);
    const api = await t.app.inject({ method: 'GET', url: '/api/v1/no-such-route' });
    expect(api.statusCode).toBe(404);
    expect(api.json()).toEqual({ error: 'route not found: GET /api/v1/no-such-route' });
    expect((await t.app.inject({ method: 'GET', url: '/api' })).statusCode).toBe(404);
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/auth/me' })).statusCode).toBe(401);
  });

  it('the console routes are not API operations: absent from the collected routes and openapi.json', async () => {
    expect(t.app.collectedRoutes.filter((r) => !r.url.startsWith('/api/'))).toEqual([]);
    const doc = (await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json', headers: await t.apiKeyHeaders('viewer') })).json<{
      paths: Record<string, unknown>;
    }>();
    expect(Object.keys(doc.paths).filter((p) => !p.startsWith('/api/'))).toEqual([]);
  });
});
