/**
 * Hostile HTTP requests generated from the served OpenAPI document: for every operation, an
 * arbitrary (fast-check) over its path parameters, query parameters and body, where any of
 * them may be a valid value (drawn from the schema, or from `Pool`: ids of real resources,
 * so requests reach the handlers) or a hostile one (hostile-values.ts), plus `examples`:
 * one request per parameter and per body field with that one field made hostile (NUL, a
 * lone surrogate, an oversized string, a number beyond bigint, -1, the wrong JSON
 * type) and the body-level cases (invalid JSON, wrong content type, utf-16, deep nesting,
 * a body past the limit, every kind of broken multipart); for a document body (SBOM, VEX,
 * OSV archive, KEV catalog), a valid document with one stored field hostile
 * (hostile-documents.ts).
 *
 * The document does not describe multipart fields, so their names come from MULTIPART_FIELDS.
 */
import fc from 'fast-check';
import { hostileDocument, hostileDocumentExamples, KEV_ROUTE } from './hostile-documents.js';
import { CONTROL_CHARACTERS, deepJson, hostileJson, hostileString, numberLiteral, percentEncode, RawJson, writeJson, type Json } from './hostile-values.js';

export interface Schema {
  type?: string;
  enum?: Json[];
  const?: Json;
  anyOf?: Schema[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  format?: string;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  maxItems?: number;
}

export interface Param {
  name: string;
  in: 'path' | 'query';
  schema: Schema;
}

export type BodySpec = { kind: 'json'; schema: Schema } | { kind: 'multipart' } | { kind: 'document'; types: string[] };

export interface Operation {
  method: string;
  /** `/api/v1/devices/{name}`; a `*` is the wildcard parameter. */
  template: string;
  params: Param[];
  body: BodySpec | undefined;
}

/** Real values to draw from: by path parameter name, for `format: uuid`, and for plain strings. */
export interface Pool {
  path: Record<string, string[]>;
  ids: string[];
  strings: string[];
}

export type Credential = 'session' | 'none' | 'bad-bearer' | 'bad-cookie';

/** One request as sent: `target` is the request line's path and query, encoded (or broken) on purpose. */
export interface HostileRequest {
  method: string;
  target: string;
  credential: Credential;
  contentType?: string;
  /** The body text; lone surrogates are sent as WTF-8 bytes, or UTF-16LE with `utf16`. */
  body?: string;
  /** A binary body (an archive), sent as is instead of `body`. */
  bytes?: Buffer;
  utf16?: boolean;
  /** Spaces appended to the body (JSON allows them): a body past the 1 MiB limit stays readable here. */
  padding?: number;
}

export const MULTIPART_FIELDS = ['name', 'version', 'kind', 'media_type', 'file', 'description'];

interface OpenApiDoc {
  paths: Record<string, Record<string, { parameters?: Param[]; requestBody?: { content: Record<string, unknown> } }>>;
}

export function operationsOf(doc: OpenApiDoc): Operation[] {
  const ops: Operation[] = [];
  for (const [template, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const content = op.requestBody?.content ?? {};
      const types = Object.keys(content);
      const json = content['application/json'] as { schema: Schema } | undefined;
      const body: BodySpec | undefined =
        json !== undefined
          ? { kind: 'json', schema: json.schema }
          : types.includes('multipart/form-data')
            ? { kind: 'multipart' }
            : types.length > 0
              ? { kind: 'document', types }
              : undefined;
      ops.push({ method: method.toUpperCase(), template, params: op.parameters ?? [], body });
    }
  }
  return ops;
}

// ---- values drawn from a schema -------------------------------------------------------

function validValue(schema: Schema, pool: Pool): fc.Arbitrary<Json> {
  if (schema.enum !== undefined) return fc.constantFrom(...schema.enum);
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.anyOf !== undefined) return fc.oneof(...schema.anyOf.map((s) => validValue(s, pool)));
  switch (schema.type) {
    case 'integer':
      return fc.integer({ min: Math.max(schema.minimum ?? -1000, -1e9), max: Math.min(schema.maximum ?? 1_000_000, 2 ** 31) });
    case 'number':
      return fc.double({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6, noNaN: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(validValue(schema.items ?? {}, pool), { maxLength: Math.min(schema.maxItems ?? 4, 4) });
    case 'object':
      return objectValue(schema, pool);
    case 'string':
      return stringValue(schema, pool);
    default:
      return fc.oneof(stringValue({}, pool), fc.integer(), fc.boolean());
  }
}

function stringValue(schema: Schema, pool: Pool): fc.Arbitrary<string> {
  if (schema.format === 'uuid') return fc.oneof(fc.constantFrom(...pool.ids), fc.uuid());
  if (schema.format === 'date-time')
    return fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString());
  const max = Math.min(schema.maxLength ?? 24, 24);
  const min = Math.min(schema.minLength ?? 0, max);
  if (schema.pattern !== undefined)
    return fc.stringMatching(new RegExp(schema.pattern)).filter((s) => s.length >= min && s.length <= (schema.maxLength ?? Infinity));
  return fc.oneof(fc.constantFrom(...pool.strings), fc.string({ minLength: min, maxLength: max }));
}

/** A field: mostly a value its schema accepts, sometimes anything hostile. */
function fieldValue(schema: Schema, pool: Pool): fc.Arbitrary<Json> {
  return fc.oneof({ weight: 4, arbitrary: validValue(schema, pool) }, { weight: 1, arbitrary: hostileJson });
}

const OPEN_OBJECT_KEYS = ['description', 'labels', 'name', 'version', 'digest', 'payload', 'payloadType', 'signatures', 'keyid', 'sig'];

function objectValue(schema: Schema, pool: Pool): fc.Arbitrary<Json> {
  const props = schema.properties ?? {};
  const keys = Object.keys(props);
  // An open object (PATCH /artifacts/{id}, a release envelope): names seen in the API, and any.
  if (keys.length === 0)
    return fc.dictionary(fc.oneof(fc.constantFrom(...OPEN_OBJECT_KEYS), hostileString), fc.oneof(hostileJson, validValue({ type: 'string' }, pool)), {
      maxKeys: 4,
    });
  const model = Object.fromEntries(keys.map((k) => [k, fieldValue(props[k]!, pool)]));
  const record = fc.oneof(
    { weight: 5, arbitrary: fc.record(model, { requiredKeys: (schema.required ?? []).filter((k) => keys.includes(k)) }) },
    { weight: 1, arbitrary: fc.record(model, { requiredKeys: [] }) },
  );
  const extra = fc.option(fc.tuple(fc.oneof(hostileString, fc.constantFrom('__proto__', 'tenant_id', 'id')), hostileJson), { freq: 5, nil: undefined });
  return fc.tuple(record, extra).map(([r, e]) => (e === undefined ? r : { ...r, [e[0]]: e[1] }) as Json);
}

/** Every property present and valid: the baseline one field at a time is made hostile in. */
function validObject(schema: Schema, pool: Pool): fc.Arbitrary<Record<string, Json>> {
  const props = schema.properties ?? {};
  return fc.record(Object.fromEntries(Object.entries(props).map(([k, s]) => [k, validValue(s, pool)])));
}

// ---- path, query, bodies --------------------------------------------------------------

const BROKEN_SEGMENTS = ['%', '%zz', '%E0%A4%A', '%ED%A0%80', '%C0%AF', '..', '.', '%2e%2e', 'a%2Fb', '%00', '%1B', 'a'.repeat(101), 'a'.repeat(3000)];

function encodePathValue(param: Param, value: string): string {
  // the wildcard keeps its slashes: it is a path
  return percentEncode(value, param.name === '*' ? '/' : '');
}

function pathValue(param: Param, pool: Pool): fc.Arbitrary<string> {
  const real = pool.path[param.name] ?? [];
  return fc.oneof(
    { weight: real.length > 0 ? 4 : 0, arbitrary: fc.constantFrom(...(real.length > 0 ? real : [''])).map((v) => encodePathValue(param, v)) },
    { weight: 2, arbitrary: validValue(param.schema, pool).map((v) => encodePathValue(param, String(v))) },
    { weight: 2, arbitrary: hostileString.map((v) => encodePathValue(param, v)) },
    { weight: 1, arbitrary: fc.constantFrom(...BROKEN_SEGMENTS) },
  );
}

function queryValue(param: Param, pool: Pool): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 4, arbitrary: validValue(param.schema, pool).map((v) => percentEncode(String(v))) },
    { weight: 2, arbitrary: hostileString.map((v) => percentEncode(v)) },
    { weight: 2, arbitrary: numberLiteral.map((v) => percentEncode(v)) },
    { weight: 1, arbitrary: fc.constantFrom('%zz', '%', '%E0%A4%A', '%ED%A0%80', '') },
  );
}

function queryString(params: Param[], pool: Pool): fc.Arbitrary<string> {
  const query = params.filter((p) => p.in === 'query');
  const pair = (p: Param) => queryValue(p, pool).map((v) => `${percentEncode(p.name)}=${v}`);
  const declared = fc.tuple(...query.map((p) => fc.option(pair(p), { freq: 2, nil: undefined })));
  const unknown = fc.option(
    fc.tuple(hostileString, hostileString).map(([k, v]) => `${percentEncode(k)}=${percentEncode(v)}`),
    { freq: 6, nil: undefined },
  );
  const repeated =
    query.length === 0
      ? fc.constant(undefined)
      : fc.option(
          fc.constantFrom(...query).chain((p) => fc.tuple(pair(p), pair(p)).map(([a, b]) => `${a}&${b}`)),
          { freq: 6, nil: undefined },
        );
  const junk = fc.option(fc.constantFrom('&&', '=', '%', 'a=%zz', 'limit', '&=&', '%ED%A0%80=1'), { freq: 8, nil: undefined });
  return fc.tuple(declared, unknown, repeated, junk).map(([d, u, r, j]) => [...d, u, r, j].filter((x) => x !== undefined).join('&'));
}

interface Body {
  contentType?: string;
  body?: string;
  bytes?: Buffer;
  utf16?: boolean;
  padding?: number;
}

const WRONG_TYPES = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/xml',
  'application/json; charset=latin1',
  'application/json; charset=utf-16',
  'application/json; charset="UTF-8"',
  'application/JSON',
  'application/json;',
  'application/vnd.cyclonedx+json',
  '*/*',
  'application/octet-stream',
  'application/json; charset=',
];
const MALFORMED_JSON = [
  '',
  ' ',
  '{',
  '{"a":',
  '[',
  'nul',
  '{"a":1}}',
  '{"__proto__":{"x":1}}',
  '{"constructor":{"prototype":{"x":1}}}',
  '\u0000',
  '{"a":"\\u0000"}',
  '{"a":"\\ud800"}',
  '\ufeff{}',
  '{"a":"\\x"}',
  '{"a":01}',
];
/** Past the 1 MiB JSON limit. */
export const OVERSIZE_PADDING = 1024 * 1024 + 100;

function jsonBody(schema: Schema, pool: Pool): fc.Arbitrary<Body> {
  const doc = schema.anyOf !== undefined ? fc.oneof(...schema.anyOf.map((s) => objectValue(s, pool))) : objectValue(schema, pool);
  return fc.oneof(
    { weight: 8, arbitrary: doc.map((v) => ({ contentType: 'application/json', body: writeJson(v) })) },
    { weight: 1, arbitrary: hostileJson.map((v) => ({ contentType: 'application/json', body: writeJson(v) })) },
    { weight: 1, arbitrary: fc.constantFrom(...MALFORMED_JSON).map((body) => ({ contentType: 'application/json', body })) },
    { weight: 1, arbitrary: fc.tuple(doc, fc.constantFrom(...WRONG_TYPES)).map(([v, contentType]) => ({ contentType, body: writeJson(v) })) },
    { weight: 1, arbitrary: doc.map((v) => ({ contentType: 'application/json; charset=utf-16', body: writeJson(v), utf16: true })) },
    { weight: 1, arbitrary: deepJson.map((v) => ({ contentType: 'application/json', body: v.text })) },
    {
      weight: 1,
      arbitrary: fc.constantFrom<Body>({ contentType: 'application/json', body: '{}', padding: OVERSIZE_PADDING }, { contentType: 'application/json' }, {}),
    },
  );
}

const SBOM_KEYS = ['bomFormat', 'specVersion', 'components', 'vulnerabilities', 'ratings', 'severity', 'spdxVersion', 'SPDXID', 'name', 'packages'];

function documentBody(types: string[], template: string): fc.Arbitrary<Body> {
  const leaf = fc.oneof(hostileJson, fc.constantFrom('CycloneDX', '1.5', 'SPDX-2.3', 'SPDXRef-DOCUMENT', 'critical', 'high'));
  const tree = fc.letrec<{ node: Json }>((tie) => ({
    node: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      leaf,
      fc.array(tie('node'), { maxLength: 3 }),
      fc.dictionary(fc.constantFrom(...SBOM_KEYS), tie('node'), { maxKeys: 5 }),
    ),
  })).node;
  // a valid document with hostile text in a stored field: random trees never pass the schemas
  const valid = hostileDocument(types, template);
  return fc.oneof(
    { weight: valid === undefined ? 0 : 8, arbitrary: valid ?? fc.constant({}) },
    { weight: 6, arbitrary: fc.tuple(fc.constantFrom(...types), tree).map(([contentType, v]) => ({ contentType, body: writeJson(v) })) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...types), fc.constantFrom(...MALFORMED_JSON)).map(([contentType, body]) => ({ contentType, body })) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...WRONG_TYPES), tree).map(([contentType, v]) => ({ contentType, body: writeJson(v) })) },
    { weight: 1, arbitrary: fc.constantFrom(...types).map((contentType) => ({ contentType, body: '{}', padding: 2 * OVERSIZE_PADDING })) },
  );
}

interface Part {
  name: string;
  filename?: string;
  content: string;
  /** A header block written as is instead of the Content-Disposition line. */
  rawHeaders?: string;
}

export interface MultipartShape {
  parts: Part[];
  boundary: string;
  /** What the content-type header says: the body's boundary, another one, none, or an empty one. */
  declared: 'same' | 'other' | 'none' | 'empty';
  ending: 'closed' | 'missing' | 'cut';
  mediaType: string;
}

export function renderMultipart(m: MultipartShape): Body {
  let body = m.parts
    .map(
      (p) =>
        `--${m.boundary}\r\n${p.rawHeaders ?? `Content-Disposition: form-data; name="${p.name}"${p.filename !== undefined ? `; filename="${p.filename}"` : ''}`}\r\n\r\n${p.content}\r\n`,
    )
    .join('');
  if (m.ending === 'closed') body += `--${m.boundary}--\r\n`;
  if (m.ending === 'cut') body = body.slice(0, Math.max(0, body.length - 7));
  const param =
    m.declared === 'same' ? `; boundary=${m.boundary}` : m.declared === 'other' ? '; boundary=not-the-boundary' : m.declared === 'empty' ? '; boundary=' : '';
  return { contentType: `${m.mediaType}${param}`, body };
}

function multipartBody(pool: Pool): fc.Arbitrary<Body> {
  const fieldName = fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...MULTIPART_FIELDS) }, { weight: 1, arbitrary: hostileString });
  const text = fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...pool.strings) }, { weight: 1, arbitrary: hostileString });
  const part: fc.Arbitrary<Part> = fc.oneof(
    { weight: 6, arbitrary: fc.record({ name: fieldName, content: text }) },
    {
      weight: 3,
      arbitrary: fc.record({ name: fc.constant('file'), filename: fc.oneof(fc.constant('app.bin'), hostileString), content: fc.string({ maxLength: 64 }) }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        name: fc.constant(''),
        rawHeaders: fc.constantFrom(
          '',
          'Content-Disposition: form-data',
          'Content-Type: text/plain',
          'garbage',
          'Content-Disposition: attachment; name="file"; filename="a"',
        ),
        content: text,
      }),
    },
  );
  const shape = fc.record({
    parts: fc.array(part, { maxLength: 12 }),
    boundary: fc.constantFrom('XyZ', '----fuzz', 'a', 'x'.repeat(70)),
    declared: fc.constantFrom<MultipartShape['declared']>('same', 'same', 'same', 'other', 'none', 'empty'),
    ending: fc.constantFrom<MultipartShape['ending']>('closed', 'closed', 'closed', 'missing', 'cut'),
    mediaType: fc.constantFrom('multipart/form-data', 'multipart/form-data', 'multipart/mixed', 'multipart/form-data; charset=latin1'),
  });
  return fc.oneof({ weight: 8, arbitrary: shape.map(renderMultipart) }, { weight: 1, arbitrary: jsonBody({ type: 'object' }, pool) });
}

function bodyOf(op: Operation, pool: Pool): fc.Arbitrary<Body> {
  switch (op.body?.kind) {
    case 'json': {
      const catalog = hostileDocument(['application/json'], op.template);
      const json = jsonBody(op.body.schema, pool);
      return catalog === undefined ? json : fc.oneof(json, catalog);
    }
    case 'multipart':
      return multipartBody(pool);
    case 'document':
      return documentBody(op.body.types, op.template);
    default:
      return fc.oneof({ weight: 6, arbitrary: fc.constant({}) }, { weight: 1, arbitrary: jsonBody({ type: 'object' }, pool) });
  }
}

const credential = fc.constantFrom<Credential>('session', 'session', 'session', 'session', 'session', 'session', 'none', 'bad-bearer', 'bad-cookie');

function pathOf(op: Operation, values: Record<string, string>): string {
  return op.template.replace(/\{([^}]+)\}|\*$/g, (m, name: string | undefined) => values[name ?? '*'] ?? m);
}

export function requestsFor(op: Operation, pool: Pool): fc.Arbitrary<HostileRequest> {
  const pathParams = op.params.filter((p) => p.in === 'path');
  return fc
    .record({
      path: fc.tuple(...pathParams.map((p) => pathValue(p, pool))),
      query: queryString(op.params, pool),
      body: bodyOf(op, pool),
      credential,
    })
    .map(({ path, query, body, credential: c }) => {
      const values = Object.fromEntries(pathParams.map((p, i) => [p.name, path[i]!]));
      return { method: op.method, target: `${pathOf(op, values)}${query === '' ? '' : `?${query}`}`, credential: c, ...body };
    });
}

// ---- one request per field --------------------------------------------------------------

// ESC, DEL and C1 controls take the same path as NUL; the random runs draw them all
const HOSTILE_TEXT = ['a\u0000b', 'lone \ud800', 'x'.repeat(70_000)];
const HOSTILE_JSON: Json[] = [...HOSTILE_TEXT, new RawJson('99999999999999999999'), new RawJson('-1'), {}];

function sample<T>(arb: fc.Arbitrary<T>, seed: number): T {
  return fc.sample(arb, { numRuns: 1, seed })[0]!;
}

/**
 * A baseline request of valid values (real resources where the pool has them), then one
 * request per path parameter, query parameter and JSON body field with only that field
 * hostile, and the body-level cases: every field is covered whatever the random runs pick.
 */
export function fieldExamples(op: Operation, pool: Pool, seed: number): HostileRequest[] {
  const pathParams = op.params.filter((p) => p.in === 'path');
  const queryParams = op.params.filter((p) => p.in === 'query');
  const basePath = Object.fromEntries(
    pathParams.map((p) => [p.name, encodePathValue(p, pool.path[p.name]?.[0] ?? String(sample(validValue(p.schema, pool), seed)))]),
  );
  const schema = op.body?.kind === 'json' ? op.body.schema : undefined;
  const bodySchema = schema?.anyOf?.[0] ?? schema;
  const baseBody = bodySchema === undefined ? undefined : sample(validObject(bodySchema, pool), seed);
  const request = (path: Record<string, string>, query: string, body: Body): HostileRequest => ({
    method: op.method,
    target: `${pathOf(op, path)}${query === '' ? '' : `?${query}`}`,
    credential: 'session',
    ...body,
  });
  const json = (v: Json): Body => ({ contentType: 'application/json', body: writeJson(v) });
  const base: Body = baseBody !== undefined ? json(baseBody) : {};
  const out: HostileRequest[] = [request(basePath, '', base)];
  for (const p of pathParams) {
    for (const v of ['a\u0000b', 'lone \ud800']) out.push(request({ ...basePath, [p.name]: encodePathValue(p, v) }, '', base));
    for (const v of ['%zz', 'a'.repeat(101)]) out.push(request({ ...basePath, [p.name]: v }, '', base));
  }
  for (const p of queryParams) {
    for (const v of ['a\u0000b', 'lone \ud800', '99999999999999999999', '1.5']) out.push(request(basePath, `${p.name}=${percentEncode(v)}`, base));
  }
  const props = Object.keys(bodySchema?.properties ?? {});
  for (const field of baseBody === undefined ? [] : props) {
    for (const v of HOSTILE_JSON) out.push(request(basePath, '', json({ ...baseBody, [field]: v })));
  }
  if (op.body?.kind === 'json') {
    for (const body of ['{', '[1,2]', '{"a\\u0000b":1}']) out.push(request(basePath, '', { contentType: 'application/json', body }));
    out.push(request(basePath, '', { contentType: 'text/plain', body: base.body ?? '{}' }));
    out.push(request(basePath, '', { contentType: 'application/json; charset=utf-16', body: base.body ?? '{}', utf16: true }));
    out.push(request(basePath, '', { contentType: 'application/json', body: `${'['.repeat(100_000)}${']'.repeat(100_000)}` }));
    out.push(request(basePath, '', { contentType: 'application/json', body: base.body ?? '{}', padding: OVERSIZE_PADDING }));
  }
  if (op.body?.kind === 'multipart') {
    for (const m of brokenMultiparts(pool)) out.push(request(basePath, '', renderMultipart(m)));
  }
  if (op.body?.kind === 'json' && op.template === KEV_ROUTE)
    for (const body of hostileDocumentExamples(['application/json'], op.template)) out.push(request(basePath, '', body));
  if (op.body?.kind === 'document') {
    for (const body of hostileDocumentExamples(op.body.types, op.template)) out.push(request(basePath, '', body));
    const type = op.body.types[0]!;
    for (const body of ['{', '{"bomFormat":"CycloneDX\\u0000","specVersion":"1.5"}', '{"spdxVersion":"SPDX-2.3","SPDXID":"\\ud800"}'])
      out.push(request(basePath, '', { contentType: type, body }));
  }
  return out;
}

/** A well-formed upload, then one of each way a multipart body breaks. */
export function brokenMultiparts(pool: Pool): MultipartShape[] {
  const fields: Part[] = [
    { name: 'name', content: pool.strings[0] ?? 'fuzz-app' },
    { name: 'version', content: '9.9.9' },
    { name: 'kind', content: 'config' },
  ];
  const file: Part = { name: 'file', filename: 'app.bin', content: 'bytes' };
  const ok: MultipartShape = { parts: [...fields, file], boundary: 'XyZ', declared: 'same', ending: 'closed', mediaType: 'multipart/form-data' };
  return [
    ok,
    { ...ok, parts: [...fields, file, { ...file, filename: 'second.bin' }] },
    { ...ok, ending: 'missing' },
    { ...ok, ending: 'cut' },
    { ...ok, declared: 'other' },
    { ...ok, declared: 'none' },
    { ...ok, declared: 'empty' },
    { ...ok, parts: [...fields, { name: '', rawHeaders: 'garbage', content: 'x' }, file] },
    { ...ok, parts: Array.from({ length: 12 }, () => ({ name: 'name', content: 'x' })) },
    ...CONTROL_CHARACTERS.slice(0, 3).map((c) => ({ ...ok, parts: [{ name: 'name', content: `a${c}b` }, ...fields.slice(1), file] })),
    { ...ok, parts: [...fields, { ...file, filename: 'a\u0000b.bin' }] },
    { ...ok, parts: [{ name: 'name', content: 'x'.repeat(5000) }, ...fields.slice(1), file] },
  ];
}
