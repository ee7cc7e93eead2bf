import { readFile, stat } from 'node:fs/promises';
import { IDENTIFIER_PATTERNS, LIMITS } from '@svc/release-core';
import { AgentError } from '../errors.js';

/**
 * The operator's custom attributes (docs/inventory.md): a JSON object in the file
 * `SVC_AGENT_INVENTORY_FILE` names, each value a string, number or boolean (sent as text).
 * Bounded by release-core's LIMITS as the server bounds them; a refusal names the attribute
 * (CONFIG_INVALID with `field` `custom.<key>`), so the operator knows which line to fix.
 */
export async function readCustomAttributes(path: string): Promise<Record<string, string>> {
  const size = (await stat(path)).size;
  if (size > LIMITS.inventoryFileBytes) {
    throw new AgentError('CONFIG_INVALID', `${path}: larger than ${LIMITS.inventoryFileBytes} bytes`, { field: 'SVC_AGENT_INVENTORY_FILE' });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(path, 'utf8'));
  } catch (cause) {
    throw new AgentError('CONFIG_INVALID', `${path}: not JSON`, { cause, field: 'SVC_AGENT_INVENTORY_FILE' });
  }
  return customAttributes(parsed, path);
}

/** The checks of `readCustomAttributes` on a parsed document. */
export function customAttributes(doc: unknown, source: string): Record<string, string> {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    throw new AgentError('CONFIG_INVALID', `${source}: must be a JSON object of attributes`, { field: 'SVC_AGENT_INVENTORY_FILE' });
  }
  const entries = Object.entries(doc as Record<string, unknown>);
  if (entries.length > LIMITS.inventoryCustomAttributes) {
    throw new AgentError('CONFIG_INVALID', `${source}: more than ${LIMITS.inventoryCustomAttributes} attributes`, { field: 'SVC_AGENT_INVENTORY_FILE' });
  }
  const out: Record<string, string> = {};
  for (const [key, value] of entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const field = `custom.${key}`;
    if (!IDENTIFIER_PATTERNS.inventoryKey.test(key)) {
      throw new AgentError(
        'CONFIG_INVALID',
        `${source}: attribute ${JSON.stringify(key.slice(0, 80))}: name must match ${IDENTIFIER_PATTERNS.inventoryKey.source}`,
        {
          field,
        },
      );
    }
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
      throw new AgentError('CONFIG_INVALID', `${source}: attribute ${key}: must be a string, number or boolean`, { field });
    }
    const text = String(value);
    if (text.length > LIMITS.inventoryValueChars) {
      throw new AgentError('CONFIG_INVALID', `${source}: attribute ${key}: longer than ${LIMITS.inventoryValueChars} characters`, { field });
    }
    // eslint-disable-next-line no-control-regex
    if (/[\u0000-\u001f\u007f]/.test(text)) throw new AgentError('CONFIG_INVALID', `${source}: attribute ${key}: contains a control character`, { field });
    out[key] = text;
  }
  return out;
}
