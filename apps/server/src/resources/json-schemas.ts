/**
 * The official JSON schemas of the documents the server reads (apps/server/schemas/, copies
 * named in its README), compiled once per process with ajv: draft-07 schemas (CycloneDX,
 * SPDX 2.3, CISA KEV) with `ajv`, 2020-12 schemas (OSV, OpenVEX) with `ajv/dist/2020`.
 * `validateAgainst` answers the first error as `<path>: <problem>` (path in dotted/bracket
 * form, e.g. `components[3].purl`), which every 400 of these documents carries.
 */
import { readFileSync } from 'node:fs';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

const addFormats = addFormatsModule as unknown as (ajv: Ajv | Ajv2020) => void;

export type SchemaName = 'cyclonedx-1.6' | 'spdx-2.3' | 'osv' | 'kev' | 'openvex';

const DIR = new URL('../../schemas/', import.meta.url);

/**
 * `uniqueItems` as ajv checks it compares every pair of items (quadratic: a CycloneDX BOM of
 * 20,000 components took minutes). The loaded schemas carry `uniqueItemsHashed` in its place:
 * the same rule, checked with a set of each item's canonical JSON (keys sorted), in one pass.
 */
function hashUniqueItems(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(hashUniqueItems);
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) out[k === 'uniqueItems' ? 'uniqueItemsHashed' : k] = hashUniqueItems(v);
  return out;
}

const load = (path: string): Record<string, unknown> => hashUniqueItems(JSON.parse(readFileSync(new URL(path, DIR), 'utf8'))) as Record<string, unknown>;

function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v);
}

function uniqueItemsHashed(unique: boolean, data: unknown[]): boolean {
  if (!unique) return true;
  const seen = new Set<string>();
  for (const item of data) {
    const k = canonical(item);
    if (seen.has(k)) return false;
    seen.add(k);
  }
  return true;
}

// IRIs (JSON Schema's `iri`, `iri-reference`) and internationalized emails are not in
// ajv-formats: checked loosely (no whitespace or characters an IRI cannot hold), so that
// package URLs, which ajv-formats' stricter URI rules reject, pass as the schemas intend.
const IRI = /^[^\s<>"{}|\\^`]+$/u;
function withFormats<T extends Ajv | Ajv2020>(ajv: T): T {
  addFormats(ajv);
  ajv.addKeyword({
    keyword: 'uniqueItemsHashed',
    type: 'array',
    schemaType: 'boolean',
    validate: uniqueItemsHashed,
    error: { message: 'must NOT have duplicate items' },
  });
  ajv.addFormat('iri', IRI);
  ajv.addFormat('iri-reference', IRI);
  ajv.addFormat('idn-email', /^[^\s@]+@[^\s@]+$/u);
  return ajv;
}

let draft7: Ajv | undefined;
let draft2020: Ajv2020 | undefined;
const compiled = new Map<SchemaName, ValidateFunction>();

function compile(name: SchemaName): ValidateFunction {
  const done = compiled.get(name);
  if (done) return done;
  let fn: ValidateFunction;
  // strict: false, the official schemas use annotation keywords ajv does not know (e.g. meta:enum)
  if (name === 'osv' || name === 'openvex') {
    draft2020 ??= withFormats(new Ajv2020({ strict: false, allErrors: false }));
    fn = draft2020.compile(load(name === 'osv' ? 'osv/schema-main-51b8156.json' : 'openvex/openvex_json_schema.json'));
  } else {
    if (!draft7) {
      draft7 = withFormats(new Ajv({ strict: false, allErrors: false }));
      draft7.addSchema(load('cyclonedx/spdx.schema.json'));
      draft7.addSchema(load('cyclonedx/jsf-0.82.schema.json'));
    }
    const file =
      name === 'cyclonedx-1.6'
        ? 'cyclonedx/bom-1.6.schema.json'
        : name === 'spdx-2.3'
          ? 'spdx/spdx-schema-2.3.json'
          : 'kev/known_exploited_vulnerabilities_schema.json';
    fn = draft7.compile(load(file));
  }
  compiled.set(name, fn);
  return fn;
}

/** `/components/3/purl` -> `components[3].purl` (the document root is `body`). */
export function pointerToPath(pointer: string): string {
  if (pointer === '') return 'body';
  let out = '';
  for (const raw of pointer.slice(1).split('/')) {
    const seg = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    out += /^\d+$/.test(seg) ? `[${seg}]` : out === '' ? seg : `.${seg}`;
  }
  return out;
}

function describe(e: ErrorObject): string {
  const params = e.params as Record<string, unknown>;
  if (e.keyword === 'required') {
    const at = pointerToPath(e.instancePath);
    return `${at === 'body' ? '' : `${at}.`}${String(params['missingProperty'])}: is required`;
  }
  if (e.keyword === 'additionalProperties') return `${pointerToPath(e.instancePath)}: unknown property ${JSON.stringify(params['additionalProperty'])}`;
  if (e.keyword === 'enum')
    return `${pointerToPath(e.instancePath)}: must be one of ${(params['allowedValues'] as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
  return `${pointerToPath(e.instancePath)}: ${e.message ?? 'is invalid'}`;
}

/** Undefined when `doc` is valid; otherwise the first error, `<path>: <problem>`. */
export function validateAgainst(name: SchemaName, doc: unknown): string | undefined {
  const fn = compile(name);
  if (fn(doc)) return undefined;
  const first = fn.errors?.[0];
  return first ? describe(first) : 'body: does not match the schema';
}
