/**
 * A route that reads its raw request body as a stream (the OSV feed import) over real HTTP:
 * the text rule's walk of the request (http/fastify.ts preValidation) treats the stream as
 * data, as it does byte buffers, instead of walking the socket's object graph (which never
 * ends). `inject()` bodies are not sockets, so this needs a listening server.
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findTextProblem } from '../../src/input-text.js';
import { makeTar, osvRecord } from '../helpers/feeds.js';
import { availableDrivers } from '../helpers/store.js';
import { createReleaseFixture, type ReleaseFixture } from '../fixtures/release-flow.js';

describe('a raw stream request body over real HTTP', () => {
  let f: ReleaseFixture;
  let base: string;
  beforeAll(async () => {
    f = await createReleaseFixture(availableDrivers()[0]!);
    await f.t.app.listen({ host: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${(f.t.app.server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await f?.dispose();
  });

  it('imports an OSV tar sent over a socket (the text rule does not walk the stream)', async () => {
    const rec = osvRecord({
      id: 'GHSA-http-http-http',
      affected: [{ ecosystem: 'npm', name: 'over-http', ranges: [{ type: 'SEMVER', events: [{ introduced: '0' }, { fixed: '1.0.0' }] }] }],
    });
    const tar = await makeTar([{ name: 'GHSA-http-http-http.json', data: JSON.stringify(rec) }]);
    const res = await fetch(`${base}/api/v1/vuln-feeds/osv?source=osv%3Ahttp`, {
      method: 'POST',
      headers: { ...f.admin, 'content-type': 'application/x-tar' },
      body: tar,
      signal: AbortSignal.timeout(15_000),
    });
    expect(res.status, await res.clone().text()).toBe(201);
    expect(await res.json()).toMatchObject({ state: 'completed', added: 1 });
  }, 30_000);

  it('still names a bad string inside a decoded body, and skips streams and buffers', () => {
    expect(findTextProblem({ a: ['ok', 'bad\u0000'] }, 'body')).toBe('body.a.1: must not contain control characters (U+0000 at index 3)');
    const stream = { pipe: () => undefined, name: 'bad\u0007' };
    expect(findTextProblem({ file: stream, bytes: Buffer.from([0]) }, 'body')).toBeUndefined();
  });
});
