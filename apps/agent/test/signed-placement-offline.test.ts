import { readFile, stat } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { envelopeBytes, signRelease } from '@svc/release-core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FilePlacementDriver, Journal } from '../src/index.js';
import { assignmentFor, makeOrchestrator } from './helpers/agent-fixture.js';
import { buildRelease, makeDevice, MemoryFetcher, type BuiltRelease } from './helpers/release-fixture.js';
import { requireTool, tempDir } from './helpers/tools.js';

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => ({ dir, cleanup } = await tempDir()));
afterEach(() => cleanup());

/** The release re-signed after `edit` changed its payload (placement fields, validity). */
function resigned(rel: BuiltRelease, edit: (p: Record<string, any>) => void): BuiltRelease {
  const payload = structuredClone(rel.payload) as Record<string, any>;
  edit(payload);
  return { ...rel, payload, envelope: envelopeBytes(signRelease(payload, rel.key)) };
}

describe.skipIf(!requireTool('openssl'))('signed release on the device: placement and offline age', () => {
  it('places the file with the signed mode, owner and group', async () => {
    const target = join(dir, 'etc', 'gw', 'gateway.toml');
    const base = buildRelease({ components: [{ name: 'gw-config', kind: 'config', content: 'interval = 30\n', placement: target }] });
    const group = (await readFile('/etc/group', 'utf8'))
      .split('\n')
      .map((l) => l.split(':'))
      .find((f) => Number(f[2]) === process.getgid!())![0]!;
    const rel = resigned(base, (p) => {
      p.components[0].placement = { path: target, mode: '0640', owner: userInfo().username, group };
    });
    const { orchestrator } = await makeOrchestrator({
      dataDir: join(dir, 'data'),
      device: await makeDevice(join(dir, 'device')),
      drivers: { config: new FilePlacementDriver({ kind: 'config', dataDir: join(dir, 'data') }) },
      fetcher: new MemoryFetcher(rel.targets),
      trustedKeys: [rel.publicKey],
    });
    const out = await orchestrator.apply(assignmentFor(rel));
    expect(out).toMatchObject({ status: 'done', activation: 'activated' });
    const st = await stat(target);
    expect(await readFile(target, 'utf8')).toBe('interval = 30\n');
    expect(st.mode & 0o7777).toBe(0o640);
    expect(st.uid).toBe(process.getuid!());
    expect(st.gid).toBe(process.getgid!());
  });

  it('refuses a release when the last successful contact is older than max_offline_age_s, and takes it after a fresh contact', async () => {
    const target = join(dir, 'etc', 'gw', 'gateway.toml');
    const rel = resigned(buildRelease({ components: [{ name: 'gw-config', kind: 'config', content: 'interval = 30\n', placement: target }] }), (p) => {
      p.validity.max_offline_age_s = 3600;
    });
    const dataDir = join(dir, 'data');
    const device = await makeDevice(join(dir, 'device'));
    const deps = {
      dataDir,
      device,
      drivers: { config: new FilePlacementDriver({ kind: 'config', dataDir }) },
      fetcher: new MemoryFetcher(rel.targets),
      trustedKeys: [rel.publicKey],
    };
    // the device's journal says it last reached the server two hours ago
    const old = await Journal.open(join(dataDir, 'journal'));
    await old.noteOnline(new Date(Date.now() - 2 * 3600_000));
    const { orchestrator, journal } = await makeOrchestrator(deps);
    const refused = await orchestrator.apply(assignmentFor(rel));
    expect(refused).toMatchObject({ status: 'refused', code: 'RELEASE_REFUSED' });
    expect((refused as { reason: string }).reason).toMatch(
      /^release refused \(OFFLINE_AGE_EXCEEDED\): device has been offline 7\d{3}s, the release allows 3600s$/,
    );
    expect(journal.unfinished()).toEqual([]);
    await expect(stat(target)).rejects.toMatchObject({ code: 'ENOENT' });

    await journal.noteOnline();
    const done = await orchestrator.apply(assignmentFor(rel));
    expect(done).toMatchObject({ status: 'done', activation: 'activated' });
    expect(await readFile(target, 'utf8')).toBe('interval = 30\n');
  });
});
