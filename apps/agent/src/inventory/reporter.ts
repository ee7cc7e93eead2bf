import type { Inventory, InventoryAttributes } from '@svc/device-proto';
import { isAgentError } from '../errors.js';
import { readCustomAttributes } from './custom.js';
import { systemAttributes, type SystemSources } from './system.js';

export interface InstalledMemberInfo {
  component: string;
  version: string;
  digest: string;
}

export interface InventoryReporterOptions {
  /** agent_version, profile, product: sent on every message as before. */
  base: Omit<Inventory, 'attributes'>;
  system: SystemSources;
  /** `SVC_AGENT_INVENTORY_FILE`: the operator's custom attributes; unset: none. */
  customFile?: string | undefined;
  /** Each installed member (the journal's committed members). */
  members?: () => InstalledMemberInfo[];
  log?: (level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void;
}

/**
 * What the agent tells the server about itself (docs/inventory.md). The attributes are read
 * again for every message but sent only when they differ from the last ones the server
 * answered (`delivered`): at enrollment and on the first check-in of a run (the server may
 * have missed the change), then only on a change. A custom attributes file the checks refuse is
 * logged, naming the attribute, and the last good custom attributes stay (none at first).
 */
export class InventoryReporter {
  private deliveredKey: string | undefined;
  private custom: Record<string, string> = {};
  private lastRefusal: string | undefined;

  constructor(private readonly o: InventoryReporterOptions) {}

  /** The attributes as they are now. */
  async attributes(): Promise<InventoryAttributes> {
    if (this.o.customFile) {
      try {
        this.custom = await readCustomAttributes(this.o.customFile);
        this.lastRefusal = undefined;
      } catch (e) {
        const reason = (e as Error).message;
        // logged once per distinct refusal, not every heartbeat
        if (reason !== this.lastRefusal) {
          this.o.log?.('warn', 'custom inventory attributes refused', { field: isAgentError(e) ? e.field : undefined, reason });
          this.lastRefusal = reason;
        }
      }
    }
    const members = (this.o.members?.() ?? []).slice().sort((a, b) => (a.component < b.component ? -1 : a.component > b.component ? 1 : 0));
    return { attributes: await systemAttributes(this.o.system), custom: { ...this.custom }, members };
  }

  /** The inventory of the next message: with `attributes` only when they changed since the last delivered. */
  async next(): Promise<Inventory> {
    const attributes = await this.attributes();
    return keyOf(attributes) === this.deliveredKey ? { ...this.o.base, attributes: undefined } : { ...this.o.base, attributes };
  }

  /** The server answered a message carrying `inv`: its attributes are what the server has. */
  delivered(inv: Inventory): void {
    if (inv.attributes !== undefined) this.deliveredKey = keyOf(inv.attributes);
  }
}

/** A comparison key: maps with sorted keys, members sorted by component. */
function keyOf(a: InventoryAttributes): string {
  const sorted = (m: Record<string, string>) =>
    Object.keys(m)
      .sort()
      .map((k) => [k, m[k]]);
  return JSON.stringify([sorted(a.attributes), sorted(a.custom), a.members.map((m) => [m.component, m.version, m.digest])]);
}
