import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderMultipart, type MultipartShape } from '../helpers/hostile-requests.js';
import { availableDrivers } from '../helpers/store.js';
import { createReleaseFixture, type ReleaseFixture } from '../fixtures/release-flow.js';

/**
 * The input rules of http/fastify.ts, each with the exact answer (docs/server.md "Input
 * rules"): the text rule on path, query and JSON values, the integer rule of limit/offset,
 * the utf-8 charset rule, the router's refusals, and multipart bodies. The property test
 * (platform-hostile-http) checks that no input answers 5xx; this one pins what each answer is.
 */
describe.each(availableDrivers())('input rules on %s', (driver) => {
  let f: ReleaseFixture;
  beforeAll(async () => {
    f = await createReleaseFixture(driver);
  });
  afterAll(async () => {
    await f?.dispose();
  });

  const refused = async (method: string, url: string, payload?: string | Buffer, headers: Record<string, string> = {}) => {
    const res = await f.t.app.inject({ method: method as never, url, headers: { ...f.admin, ...headers }, ...(payload === undefined ? {} : { payload }) });
    expect(Object.keys(res.json())).toEqual(['error']);
    return { status: res.statusCode, error: res.json().error as string };
  };
  const json = { 'content-type': 'application/json' };

  it('control characters and lone surrogates in path, query and JSON values are 400 naming the field', async () => {
    expect(await refused('GET', '/api/v1/devices/a%00b')).toEqual({
      status: 400,
      error: 'params.name: must not contain control characters (U+0000 at index 1)',
    });
    expect(await refused('GET', '/api/v1/devices?q=%1B%5B2J')).toEqual({
      status: 400,
      error: 'querystring.q: must not contain control characters (U+001B at index 0)',
    });
    expect(await refused('POST', '/api/v1/enroll-tokens', '{"name":"a\\u007fb"}', json)).toEqual({
      status: 400,
      error: 'body.name: must not contain control characters (U+007F at index 1)',
    });
    expect(await refused('POST', '/api/v1/enroll-tokens', '{"name":"a\\u009bb"}', json)).toEqual({
      status: 400,
      error: 'body.name: must not contain control characters (U+009B at index 1)',
    });
    expect(await refused('POST', '/api/v1/enroll-tokens', '{"name":"x\\ud800"}', json)).toEqual({
      status: 400,
      error: 'body.name: must be well-formed Unicode (lone surrogate U+D800 at index 1)',
    });
    expect(await refused('POST', '/api/v1/groups', '{"name":"g","members":["ok","b\\u0000"]}', json)).toEqual({
      status: 400,
      error: 'body.members.1: must not contain control characters (U+0000 at index 1)',
    });
    expect(await refused('PATCH', '/api/v1/artifacts/00000000-0000-4000-8000-000000000000', '{"labels":{"k\\u0000":"v"}}', json)).toEqual({
      status: 400,
      error: 'body.labels: field name must not contain control characters (U+0000 at index 1)',
    });
    // unauthenticated: the rule runs before the handler reads the store
    const login = await f.t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/login',
      headers: json,
      payload: '{"email":"a\\u0000@example.test","password":"password123"}',
    });
    expect({ status: login.statusCode, body: login.json() }).toEqual({
      status: 400,
      body: { error: 'body.email: must not contain control characters (U+0000 at index 1)' },
    });
    // TAB, LF and CR are text; a surrogate pair is one character
    const ok = await f.t.app.inject({
      method: 'POST',
      url: '/api/v1/enroll-tokens',
      headers: { ...f.admin, ...json },
      payload: '{"name":"a\\tb\\nc\\r \\ud83d\\ude00"}',
    });
    expect(ok.statusCode).toBe(201);
    expect(ok.json().name).toBe('a\tb\nc\r 😀');
  });

  it('limit and offset are decimal integers; offset at most 2^31-1, limit clamped to 200', async () => {
    expect(await refused('GET', '/api/v1/devices?offset=99999999999999999999')).toEqual({ status: 400, error: 'querystring.offset: must be <= 2147483647' });
    expect(await refused('GET', '/api/v1/devices?limit=1.5')).toEqual({ status: 400, error: 'querystring.limit: must be integer' });
    expect(await refused('GET', '/api/v1/devices?offset=1.5')).toEqual({ status: 400, error: 'querystring.offset: must be integer' });
    for (const bad of ['1e2', '0x10', '%201', 'true', ''])
      expect((await refused('GET', `/api/v1/artifacts?limit=${bad}`)).error).toBe('querystring.limit: must be integer');
    expect(await refused('GET', '/api/v1/devices?offset=-1')).toEqual({ status: 400, error: 'querystring.offset: must be >= 0' });
    expect((await refused('GET', '/api/v1/devices?limit=1&limit=2')).error).toMatch(/^querystring\.limit: /);
    const edge = await f.t.app.inject({ method: 'GET', url: '/api/v1/devices?offset=2147483647&limit=99999999999999999999', headers: f.admin });
    expect(edge.statusCode).toBe(200);
    expect({ limit: edge.json().limit, offset: edge.json().offset, devices: edge.json().devices }).toEqual({ limit: 200, offset: 2147483647, devices: [] });
    // the bounds are in the OpenAPI document
    const doc = (await f.t.app.inject({ method: 'GET', url: '/api/v1/openapi.json', headers: f.admin })).json();
    const offset = doc.paths['/api/v1/devices'].get.parameters.find((p: { name: string }) => p.name === 'offset');
    expect(offset.schema).toMatchObject({ type: 'integer', minimum: 0, maximum: 2147483647 });
  });

  it('a text body in a charset other than utf-8, or JSON bytes that are not UTF-8, are 400; utf-8 in any spelling is read', async () => {
    const body = Buffer.from('{"name":"x"}', 'utf16le');
    expect(await refused('POST', '/api/v1/enroll-tokens', body, { 'content-type': 'application/json; charset=utf-16' })).toEqual({
      status: 400,
      error: 'content-type: charset "utf-16" is not supported (bodies are read as utf-8)',
    });
    expect((await refused('PUT', '/api/v1/artifacts/x/sbom', '{}', { 'content-type': 'application/vnd.cyclonedx+json; charset=latin1' })).error).toMatch(
      /^content-type: charset "latin1"/,
    );
    const latin1 = Buffer.from('{"name":"caf\xe9"}', 'latin1');
    expect(await refused('POST', '/api/v1/enroll-tokens', latin1, json)).toEqual({ status: 400, error: 'body: not valid UTF-8' });
    for (const type of ['application/json; charset=UTF-8', 'application/json;charset="utf8"']) {
      const res = await f.t.app.inject({
        method: 'POST',
        url: '/api/v1/enroll-tokens',
        headers: { ...f.admin, 'content-type': type },
        payload: '{"name":"utf8"}',
      });
      expect(res.statusCode, type).toBe(201);
    }
  });

  it('the router\'s refusals are in the {"error"} shape: 414 for a long parameter, 400 for bad percent-encoding', async () => {
    expect(await refused('GET', `/api/v1/devices/${'a'.repeat(101)}`)).toEqual({ status: 414, error: 'path: a path parameter is longer than 100 characters' });
    expect(await refused('GET', '/api/v1/devices/%zz')).toEqual({ status: 400, error: 'path: not a valid percent-encoded URL path' });
    expect(await refused('GET', '/api/v1/devices/%ED%A0%80')).toEqual({ status: 400, error: 'path: not a valid percent-encoded URL path' });
  });

  describe('multipart uploads to POST /artifacts', () => {
    const fields = [
      { name: 'name', content: 'app' },
      { name: 'version', content: '1.0.0' },
      { name: 'kind', content: 'config' },
    ];
    const file = { name: 'file', filename: 'app.bin', content: 'bytes' };
    const ok: MultipartShape = { parts: [...fields, file], boundary: 'XyZ', declared: 'same', ending: 'closed', mediaType: 'multipart/form-data' };
    const upload = async (m: MultipartShape) => {
      const { contentType, body } = renderMultipart(m);
      return refused('POST', '/api/v1/artifacts', body, { 'content-type': contentType! });
    };
    const countArtifacts = async () => (await f.api('GET', '/api/v1/artifacts')).body.total as number;

    it('broken bodies are their 4xx and store nothing', async () => {
      const before = await countArtifacts();
      expect(await upload({ ...ok, parts: [...fields, file, { ...file, filename: 'two.bin' }] })).toEqual({
        status: 413,
        error: 'body: more files than the route accepts',
      });
      expect(await upload({ ...ok, parts: Array.from({ length: 9 }, () => ({ name: 'name', content: 'x' })) })).toEqual({
        status: 413,
        error: 'body: more fields than the route accepts',
      });
      for (const broken of [
        { ...ok, ending: 'missing' as const },
        { ...ok, ending: 'cut' as const },
        { ...ok, declared: 'other' as const },
        { ...ok, declared: 'none' as const },
        { ...ok, declared: 'empty' as const },
      ]) {
        const r = await upload(broken);
        expect({ ...broken, r }).toMatchObject({ r: { status: 400, error: expect.stringMatching(/^body: malformed multipart\/form-data \(/) } });
      }
      expect(await countArtifacts()).toBe(before);
    });

    it('text fields and file names follow the text rule', async () => {
      expect(await upload({ ...ok, parts: [{ name: 'name', content: 'a\u0000b' }, ...fields.slice(1), file] })).toEqual({
        status: 400,
        error: 'name: must not contain control characters (U+0000 at index 1)',
      });
      expect(await upload({ ...ok, parts: [...fields, { ...file, filename: 'a\u001b.bin' }] })).toEqual({
        status: 400,
        error: 'file.filename: must not contain control characters (U+001B at index 1)',
      });
      const good = await f.t.app.inject({
        method: 'POST',
        url: '/api/v1/artifacts',
        headers: { ...f.admin, 'content-type': renderMultipart(ok).contentType! },
        payload: renderMultipart(ok).body,
      });
      expect(good.statusCode).toBe(201);
    });
  });
});
