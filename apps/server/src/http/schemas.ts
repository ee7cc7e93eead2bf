import { Type, type TArray, type TInteger, type TObject, type TProperties, type TSchema } from 'typebox';
import { SERVER_LIMITS } from '../limits.js';

/**
 * Schemas shared by route modules. Every route declares its request and response
 * schemas once (TypeBox); they drive validation, serialization and /api/v1/openapi.json.
 */

/** spec §7: every error body. */
export const ErrorBody = Type.Object({ error: Type.String() }, { additionalProperties: false, $id: undefined });

/**
 * spec §8: `limit` default 50, clamp at 200 (handled in `page()`); `offset` >= 0. Both are
 * written as decimal integers (`1.5`, `1e3`, `0x10` are 400, http/validator.ts); a limit
 * above 200 of any size is clamped, an offset above SERVER_LIMITS.pageOffset is 400.
 */
export const PageQuery = {
  limit: Type.Optional(Type.Integer({ minimum: 1, description: 'items per page, a decimal integer >= 1 (default 50, values above 200 are clamped to 200)' })),
  offset: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: SERVER_LIMITS.pageOffset,
      description: `items skipped, a decimal integer from 0 to ${SERVER_LIMITS.pageOffset} (default 0)`,
    }),
  ),
};

/** The page fields of every list answer (spec §8), after the items and before `counts`. */
type PageProperties<K extends string, I extends TSchema, C extends TSchema> = { [P in K]: TArray<I> } & {
  total: TInteger;
  limit: TInteger;
  offset: TInteger;
  counts: C;
};

/**
 * spec §8: the one shape of a list answer: the page's items under the list's own key, `total`
 * (items matching the query), the `limit` and `offset` the page was read with, and `counts` (the
 * list's breakdown, declared per list). A list that answers more than its page names those
 * properties in `before` (between the items and `total`) or `after` (after `counts`); the order
 * is the order of the OpenAPI document and of the serialized answer.
 */
export function PageOf<
  K extends string,
  I extends TSchema,
  C extends TSchema,
  B extends TProperties = Record<never, never>,
  A extends TProperties = Record<never, never>,
>(key: K, item: I, counts: C, more: { before?: B; after?: A } = {}): TObject<{ [P in K]: TArray<I> } & B & PageProperties<K, I, C> & A> {
  const properties = {
    [key]: Type.Array(item),
    ...more.before,
    total: Type.Integer(),
    limit: Type.Integer(),
    offset: Type.Integer(),
    counts,
    ...more.after,
  } as unknown as { [P in K]: TArray<I> } & B & PageProperties<K, I, C> & A;
  return Type.Object(properties);
}

export const Uuid = Type.String({ format: 'uuid' });
export const Timestamp = Type.String({ format: 'date-time' });
export const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);

/** Standard error responses to spread into `schema.response`. */
export const ErrorResponses = {
  400: ErrorBody,
  401: ErrorBody,
  403: ErrorBody,
  404: ErrorBody,
  409: ErrorBody,
} as const;

/** A strict object: unknown fields are a 400 naming the field. */
export function Strict<P extends Record<string, TSchema>>(properties: P) {
  return Type.Object(properties, { additionalProperties: false });
}

/** RFC 3339 UTC with `Z` (contracts preamble). */
export function iso(d: Date): string;
export function iso(d: Date | null): string | null;
export function iso(d: Date | null): string | null {
  return d === null ? null : new Date(d).toISOString();
}
