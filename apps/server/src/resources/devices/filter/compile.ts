import { sql, type RawBuilder } from 'kysely';
import { likeContains } from '../../../http/pagination.js';
import type { FilterColumn, FilterNode } from './parser.js';

/**
 * A parsed filter as a WHERE condition over `devices` (docs/device-filter.md "Meaning"). Every
 * value, attribute name and pattern is a bound parameter; the SQL text comes only from the
 * fixed fragments below, chosen by the node's kind, field and operator. Equality on an
 * attribute is a containment the GIN index on `inventory` serves; `tags has` the one on `tags`.
 */
export function compileFilter(node: FilterNode): RawBuilder<unknown> {
  switch (node.kind) {
    case 'and':
      return sql`(${compileFilter(node.left)} AND ${compileFilter(node.right)})`;
    case 'or':
      return sql`(${compileFilter(node.left)} OR ${compileFilter(node.right)})`;
    case 'not':
      return sql`(NOT ${compileFilter(node.operand)})`;
    case 'compare':
      return compare(node);
  }
}

const COLUMN: Record<FilterColumn, RawBuilder<unknown>> = {
  name: sql.ref('devices.name'),
  status: sql.ref('devices.status'),
  profile: sql.ref('devices.profile'),
  agent_version: sql.ref('devices.agent_version'),
};

function compare(n: Extract<FilterNode, { kind: 'compare' }>): RawBuilder<unknown> {
  const f = n.field;
  if (f.kind === 'tags') return sql`(devices.tags @> ARRAY[${n.value}]::text[])`;
  if (f.kind === 'attribute') {
    const contains = sql`(devices.inventory @> ${JSON.stringify({ [f.namespace]: { [f.key]: n.value } })}::jsonb)`;
    if (n.op === '=') return contains;
    // a device without the attribute differs from every value
    if (n.op === '!=') return sql`(NOT ${contains})`;
    return scalar(sql`(devices.inventory -> ${f.namespace}::text ->> ${f.key}::text)`, n.op, n.value, false);
  }
  return scalar(COLUMN[f.name], n.op, n.value, f.name === 'name');
}

/** A text value against an operator; `lowercase`: the column holds lowercase text only (names). */
function scalar(col: RawBuilder<unknown>, op: string, value: string, lowercase: boolean): RawBuilder<unknown> {
  switch (op) {
    case '=':
      return sql`(${col} = ${value}::text)`;
    case '!=':
      return sql`(${col} IS DISTINCT FROM ${value}::text)`;
    case '~':
      // names are lowercase (their CHECK): LIKE on the lowercased needle is ILIKE and uses the trigram index
      return lowercase
        ? sql`(${col} LIKE ${likeContains(value.toLowerCase())}::text ESCAPE '\\')`
        : sql`(${col} ILIKE ${likeContains(value)}::text ESCAPE '\\')`;
    default:
      return sql`(svc_version_key(${col}) COLLATE "C" ${sql.raw(ORDER_OP[op]!)} svc_version_key(${value}::text) COLLATE "C")`;
  }
}

/** The ordered operators' SQL: a closed table, never the caller's text. */
const ORDER_OP: Record<string, string> = { '<': '<', '<=': '<=', '>': '>', '>=': '>=' };
