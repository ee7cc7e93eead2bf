import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LIMITS } from '@svc/release-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAgentError } from '../src/errors.js';
import { readCustomAttributes } from '../src/inventory/custom.js';
import { InventoryReporter } from '../src/inventory/reporter.js';
import { parseOsRelease, systemAttributes } from '../src/inventory/system.js';

/**
 * The agent's inventory (docs/inventory.md): the documented attributes read from a prepared
 * system tree, the operator's custom file with every bound refused naming the attribute, and
 * the reporter sending attributes only when they differ from the last the server answered.
 */
describe('agent inventory', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-inventory-'));
    await mkdir(join(dir, 'etc'), { recursive: true });
    await mkdir(join(dir, 'sys/firmware/devicetree/base'), { recursive: true });
    await writeFile(join(dir, 'etc/os-release'), 'NAME="Debian GNU/Linux"\nID=debian\nVERSION_ID="12"\n');
    await writeFile(join(dir, 'sys/firmware/devicetree/base/model'), 'Acme GW-3 rev\u00072\0');
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads the documented set from the system; control characters are blanked; RAUC when configured', async () => {
    const a = await systemAttributes({
      agentVersion: '2.4.0',
      stagingPath: dir,
      root: dir,
      rauc: async () => ({ compatible: 'acme-gw3', booted: 'A', primary: 'A' }),
    });
    expect(a).toMatchObject({
      agent_version: '2.4.0',
      hw_model: 'Acme GW-3 rev 2',
      os_id: 'debian',
      os_version: '12',
      rauc_compatible: 'acme-gw3',
      rauc_booted: 'A',
    });
    expect(a.kernel).not.toBe('');
    expect(BigInt(a.staging_free_bytes!)).toBeGreaterThan(0n);
    const noRauc = await systemAttributes({
      agentVersion: '2.4.0',
      stagingPath: join(dir, 'missing'),
      root: join(dir, 'empty'),
      rauc: async () => Promise.reject(new Error('no rauc')),
    });
    expect(Object.keys(noRauc).sort()).toEqual(['agent_version', 'arch', 'kernel']);
    expect(parseOsRelease("ID='alpine'\n# comment\nVERSION_ID=3.19.1")).toEqual({ ID: 'alpine', VERSION_ID: '3.19.1' });
  });

  it('custom attributes: strings, numbers and booleans as text; each bound refused naming the attribute', async () => {
    const file = join(dir, 'custom.json');
    await writeFile(file, JSON.stringify({ site: 'lyon', line: 3, pilot: true }));
    expect(await readCustomAttributes(file)).toEqual({ line: '3', pilot: 'true', site: 'lyon' });
    const refusals: [string, string | undefined][] = [
      [JSON.stringify({ 'Bad-Key': 'x' }), 'custom.Bad-Key'],
      [JSON.stringify({ nested: { a: 1 } }), 'custom.nested'],
      [JSON.stringify({ long: 'x'.repeat(LIMITS.inventoryValueChars + 1) }), 'custom.long'],
      [JSON.stringify({ ctl: 'a\u0000b' }), 'custom.ctl'],
      [JSON.stringify(Object.fromEntries(Array.from({ length: LIMITS.inventoryCustomAttributes + 1 }, (_, i) => [`k${i}`, 1]))), 'SVC_AGENT_INVENTORY_FILE'],
      [JSON.stringify(['a']), 'SVC_AGENT_INVENTORY_FILE'],
      ['{not json', 'SVC_AGENT_INVENTORY_FILE'],
      [JSON.stringify({ big: 'x'.repeat(LIMITS.inventoryFileBytes) }), 'SVC_AGENT_INVENTORY_FILE'],
    ];
    for (const [text, field] of refusals) {
      await writeFile(file, text);
      const e = await readCustomAttributes(file).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(isAgentError(e, 'CONFIG_INVALID'), text.slice(0, 40)).toBe(true);
      expect((e as { field?: string }).field, text.slice(0, 40)).toBe(field);
    }
  });

  it('the reporter sends attributes first, then only when they change; a refused file keeps the last good custom set', async () => {
    const file = join(dir, 'reporter.json');
    await writeFile(file, JSON.stringify({ site: 'lyon' }));
    const logs: string[] = [];
    let members = [{ component: 'app', version: '1.0.0', digest: 'sha256:aa' }];
    const r = new InventoryReporter({
      base: { agentVersion: '2.4.0', profile: 'p', product: 'x', slots: [] },
      system: { agentVersion: '2.4.0', stagingPath: dir, root: dir },
      customFile: file,
      members: () => members,
      log: (_l, msg, fields) => logs.push(`${msg} ${String(fields?.field)}`),
    });
    const first = await r.next();
    expect(first.attributes?.custom).toEqual({ site: 'lyon' });
    // not answered yet: sent again
    expect((await r.next()).attributes).toBeDefined();
    r.delivered(first);
    expect((await r.next()).attributes).toBeUndefined();
    members = [{ component: 'app', version: '1.1.0', digest: 'sha256:bb' }];
    const changed = await r.next();
    expect(changed.attributes?.members).toEqual(members);
    r.delivered(changed);
    expect((await r.next()).attributes).toBeUndefined();
    await writeFile(file, JSON.stringify({ 'BAD KEY': 1 }));
    expect((await r.next()).attributes).toBeUndefined();
    expect((await r.next()).attributes).toBeUndefined();
    expect(logs).toEqual(['custom inventory attributes refused custom.BAD KEY']);
    await writeFile(file, JSON.stringify({ site: 'paris' }));
    expect((await r.next()).attributes?.custom).toEqual({ site: 'paris' });
  });
});
