import { readFile, statfs } from 'node:fs/promises';
import { arch, release } from 'node:os';
import { LIMITS } from '@svc/release-core';

/**
 * The documented attribute set (docs/inventory.md "Reported attributes"), read from the
 * system. Each reader answers undefined when the device has no such thing (no devicetree
 * model, no RAUC); a missing attribute is left out, never sent empty.
 */
export interface SystemSources {
  agentVersion: string;
  /** The staging path whose free space is reported (the agent's data directory). */
  stagingPath: string;
  /** `rauc status`, when the device updates its OS with RAUC. */
  rauc?: () => Promise<{ compatible: string; booted: string; primary: string }>;
  /** Root of the files read (tests point it at a prepared tree); default "/". */
  root?: string;
}

export async function systemAttributes(s: SystemSources): Promise<Record<string, string>> {
  const root = s.root ?? '';
  const out: Record<string, string> = { agent_version: s.agentVersion, arch: arch(), kernel: release() };
  const model = (await firstLine(`${root}/sys/firmware/devicetree/base/model`)) ?? (await firstLine(`${root}/sys/class/dmi/id/product_name`));
  if (model) out.hw_model = model;
  const osRelease = await readText(`${root}/etc/os-release`);
  if (osRelease !== undefined) {
    const fields = parseOsRelease(osRelease);
    if (fields.ID) out.os_id = fields.ID;
    if (fields.VERSION_ID) out.os_version = fields.VERSION_ID;
  }
  try {
    const fs = await statfs(s.stagingPath);
    out.staging_free_bytes = String(BigInt(fs.bavail) * BigInt(fs.bsize));
  } catch {
    /* no such path yet: not reported */
  }
  if (s.rauc) {
    try {
      const st = await s.rauc();
      out.rauc_compatible = st.compatible;
      out.rauc_booted = st.booted;
      out.rauc_primary = st.primary;
    } catch {
      /* rauc not answering: its attributes are left out until it does */
    }
  }
  // what the system says is shown as text: no control characters, bounded as the server bounds it
  // eslint-disable-next-line no-control-regex
  for (const [k, v] of Object.entries(out)) out[k] = v.replace(/[\u0000-\u001f\u007f]/g, ' ').slice(0, LIMITS.inventoryValueChars);
  return out;
}

/** /etc/os-release (os-release(5)): KEY=value lines, values optionally quoted. */
export function parseOsRelease(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^([A-Z0-9_]+)=(.*)$/.exec(line.trim());
    if (!m) continue;
    let v = m[2]!;
    if ((v.startsWith('"') && v.endsWith('"')) || (v.startsWith("'") && v.endsWith("'"))) v = v.slice(1, -1).replace(/\\(.)/g, '$1');
    out[m[1]!] = v;
  }
  return out;
}

async function readText(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return undefined;
  }
}

async function firstLine(path: string): Promise<string | undefined> {
  const t = await readText(path);
  // devicetree strings end with NUL
  const line = t?.replace(/\0/g, '').split('\n')[0]?.trim();
  return line === '' ? undefined : line;
}
