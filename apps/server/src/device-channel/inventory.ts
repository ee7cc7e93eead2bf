import type { Inventory as ProtoInventory } from '@svc/device-proto';
import { IDENTIFIER_PATTERNS } from '@svc/release-core';
import { invalidInput } from '../errors/server-error.js';

/** What a device reports of itself; an empty string is "not reported". */
export interface Inventory {
  agentVersion: string;
  profile: string;
}

const MAX_FIELD = 64;

/** Bounded, validated inventory (untrusted input); empty strings mean "not reported". */
export function readInventory(inv: ProtoInventory | undefined): Inventory {
  const agentVersion = inv?.agentVersion ?? '';
  const profile = inv?.profile ?? '';
  if (agentVersion.length > MAX_FIELD) throw invalidInput('inventory.agent_version', `longer than ${MAX_FIELD} characters`);
  if (profile !== '' && !IDENTIFIER_PATTERNS.profile.test(profile)) throw invalidInput('inventory.profile', `must match ${IDENTIFIER_PATTERNS.profile.source}`);
  if ((inv?.slots.length ?? 0) > 8) throw invalidInput('inventory.slots', 'more than 8 slots');
  return { agentVersion, profile };
}
