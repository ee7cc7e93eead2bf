import type { Inventory as ProtoInventory } from '@svc/device-proto';
import { IDENTIFIER_PATTERNS, LIMITS } from '@svc/release-core';
import { invalidInput } from '../errors/server-error.js';
import type { InventoryAttributes } from '../resources/devices/inventory.js';
import { SERVER_LIMITS } from '../limits.js';

/** What a device reports of itself; an empty string is "not reported", `attributes` absent is "unchanged". */
export interface Inventory {
  agentVersion: string;
  profile: string;
  attributes?: InventoryAttributes;
}

/** Bounded, validated inventory (untrusted input); empty strings mean "not reported". */
export function readInventory(inv: ProtoInventory | undefined): Inventory {
  const agentVersion = inv?.agentVersion ?? '';
  const profile = inv?.profile ?? '';
  if (agentVersion.length > SERVER_LIMITS.inventoryFieldChars)
    throw invalidInput('inventory.agent_version', `longer than ${SERVER_LIMITS.inventoryFieldChars} characters`);
  if (profile !== '' && !IDENTIFIER_PATTERNS.profile.test(profile)) throw invalidInput('inventory.profile', `must match ${IDENTIFIER_PATTERNS.profile.source}`);
  if ((inv?.slots.length ?? 0) > 8) throw invalidInput('inventory.slots', 'more than 8 slots');
  const a = inv?.attributes;
  if (a === undefined) return { agentVersion, profile };
  const members = a.members;
  if (members.length > LIMITS.inventoryMembers) throw invalidInput('inventory.attributes.members', `more than ${LIMITS.inventoryMembers} members`);
  members.forEach((m, i) => {
    const field = `inventory.attributes.members[${i}]`;
    if (!IDENTIFIER_PATTERNS.componentName.test(m.component))
      throw invalidInput(`${field}.component`, `must match ${IDENTIFIER_PATTERNS.componentName.source}`);
    checkValue(`${field}.version`, m.version);
    checkValue(`${field}.digest`, m.digest);
  });
  return {
    agentVersion,
    profile,
    attributes: {
      attributes: readMap(a.attributes, 'inventory.attributes.attributes', LIMITS.inventoryAttributes),
      custom: readMap(a.custom, 'inventory.attributes.custom', LIMITS.inventoryCustomAttributes),
      members: members.map((m) => ({ component: m.component, version: m.version, digest: m.digest })),
    },
  };
}

/** One map of attributes: bounded count, keys of the inventory-key pattern, bounded values; sorted by key. */
function readMap(map: Record<string, string>, field: string, max: number): Record<string, string> {
  const keys = Object.keys(map);
  if (keys.length > max) throw invalidInput(field, `more than ${max} attributes`);
  const out: Record<string, string> = {};
  for (const key of keys.sort()) {
    if (!IDENTIFIER_PATTERNS.inventoryKey.test(key)) {
      throw invalidInput(`${field}.${JSON.stringify(key.slice(0, 80))}`, `attribute name must match ${IDENTIFIER_PATTERNS.inventoryKey.source}`);
    }
    const value = map[key]!;
    checkValue(`${field}.${key}`, value);
    out[key] = value;
  }
  return out;
}

/** A value: at most `LIMITS.inventoryValueChars`, no control characters (it is shown in the console and in filters). */
function checkValue(field: string, value: string): void {
  if (value.length > LIMITS.inventoryValueChars) throw invalidInput(field, `longer than ${LIMITS.inventoryValueChars} characters`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(value)) throw invalidInput(field, 'contains a control character');
}
