import type { FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify';
import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';

/**
 * The validator compiler of every route: TypeBox's compiled check, after a strict
 * conversion of path, query and header values (strings on the wire) into the types their
 * schema declares. Bodies are JSON and are checked as they are.
 *
 * Not @fastify/type-provider-typebox's `TypeBoxValidatorCompiler`: its conversion (TypeBox
 * `Value.Convert`) gets two things wrong for HTTP input:
 * - it reads property names as regular expressions: the wildcard parameter `*` of
 *   `/tuf/:tenantId/targets/*` throws `Invalid regular expression: /^*$/` on every request;
 * - it truncates to integers and reads `''`, `true`, `0x10` and ` 12 ` as numbers
 *   (`limit=1.5` would be served as `limit=1`).
 * Here a value converts only when it is written as the number or boolean itself; anything
 * else stays a string and the check refuses it naming the field (400).
 */
export const validatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) => {
  const check = Compile(schema);
  const convert = httpPart === 'body' ? undefined : converterFor(schema);
  return (value: unknown) => {
    const converted = convert === undefined ? value : convert(value);
    if (check.Check(converted)) return { value: converted };
    return { error: check.Errors(converted) as unknown as FastifySchemaValidationError[] };
  };
};

const INTEGER = /^-?[0-9]+$/;
const NUMBER = /^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$/;

type Scalar = (s: string) => unknown;

function scalarFor(prop: unknown): Scalar | undefined {
  const type = (prop as { type?: unknown } | undefined)?.type;
  if (type === 'integer') return (s) => (INTEGER.test(s) ? Number(s) : s);
  if (type === 'number') return (s) => (NUMBER.test(s) ? Number(s) : s);
  if (type === 'boolean') return (s) => (s === 'true' ? true : s === 'false' ? false : s);
  return undefined;
}

/** Converts the declared non-string properties of a flat object of wire strings, in place. */
function converterFor(schema: TSchema): ((value: unknown) => unknown) | undefined {
  const properties = (schema as { properties?: Record<string, unknown> }).properties ?? {};
  const scalars = Object.entries(properties).flatMap(([key, prop]) => {
    const scalar = scalarFor(prop);
    return scalar === undefined ? [] : [[key, scalar] as const];
  });
  if (scalars.length === 0) return undefined;
  return (value) => {
    if (typeof value !== 'object' || value === null) return value;
    const record = value as Record<string, unknown>;
    for (const [key, scalar] of scalars) {
      const v = record[key];
      // a repeated query parameter arrives as an array and is refused by the check
      if (Object.hasOwn(record, key) && typeof v === 'string') record[key] = scalar(v);
    }
    return value;
  };
}
