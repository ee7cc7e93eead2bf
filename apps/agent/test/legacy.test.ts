import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FilePlacementDriver, type LegacyAssignment } from '../src/index.js';
import { makeOrchestrator } from './helpers/agent-fixture.js';
import { MemoryFetcher, makeDevice, sha, type DeviceFixture } from './helpers/release-fixture.js';
import { tempDir } from './helpers/tools.js';

let root: { dir: string; cleanup: () => Promise<void> };
let device: DeviceFixture;
beforeAll(async () => {
  root = await tempDir();
  device = await makeDevice(join(root.dir, 'pki'));
});
afterAll(() => root.cleanup());

// spec §2.2 rule 3: legacy rollouts keep working during migration and stay distinguishable.
describe('legacy rollouts (no release pointer)', () => {
  for (const settings of ['without release settings', 'with release settings'] as const) {
    it(`install and report a plain legacy status, never a svc.release-receipt (${settings})`, async () => {
      const dataDir = join(root.dir, settings.replaceAll(' ', '-'));
      const bytes = new TextEncoder().encode('weights-v7');
      const fetcher = new MemoryFetcher(new Map([['models/w7', bytes]]));
      const { orchestrator } = await makeOrchestrator({
        dataDir,
        device,
        drivers: { model: new FilePlacementDriver({ kind: 'model', dataDir }) },
        fetcher,
        trustedKeys: settings === 'with release settings' ? [] : null,
      });
      const a: LegacyAssignment = {
        kind: 'legacy',
        rolloutId: 'ro-legacy-1',
        component: 'weights',
        componentKind: 'model',
        target: 'models/w7',
        digest: sha(bytes),
        length: bytes.length,
      };
      const out = await orchestrator.apply(a);
      expect(out).toMatchObject({ status: 'done', kind: 'legacy', activation: 'activated' });
      if (out.status !== 'done') throw new Error('unreachable');
      expect(out.outboxFile).toMatch(/\.legacy-status\.json$/);
      const doc = JSON.parse(await readFile(out.outboxFile, 'utf8')) as Record<string, unknown>;
      expect(doc).toMatchObject({ type: 'svc.legacy-status', rollout: 'ro-legacy-1', status: 'installed', candidate_digest: sha(bytes) });
      expect(doc).not.toHaveProperty('payloadType');
      expect(await readFile(join(dataDir, 'placed', 'model', 'weights'), 'utf8')).toBe('weights-v7');
      expect((await orchestrator.outbox.list()).map((e) => e.kind)).toEqual(['legacy-status']);
    });
  }

  it('a legacy artifact with a wrong digest is refused before it is placed', async () => {
    const dataDir = join(root.dir, 'legacy-bad');
    const fetcher = new MemoryFetcher(new Map([['models/w8', new TextEncoder().encode('evil')]]));
    const { orchestrator } = await makeOrchestrator({
      dataDir,
      device,
      drivers: { model: new FilePlacementDriver({ kind: 'model', dataDir }) },
      fetcher,
      trustedKeys: null,
    });
    const out = await orchestrator.apply({
      kind: 'legacy',
      rolloutId: 'ro-2',
      component: 'weights',
      componentKind: 'model',
      target: 'models/w8',
      digest: sha('good'),
      length: 4,
    });
    expect(out).toMatchObject({ status: 'done', kind: 'legacy', activation: 'failed' });
  });

  it('rejects a malformed assignment naming the fields', async () => {
    const dataDir = join(root.dir, 'legacy-malformed');
    const { orchestrator } = await makeOrchestrator({ dataDir, device, drivers: {}, fetcher: new MemoryFetcher(new Map()), trustedKeys: null });
    const out = await orchestrator.apply({
      kind: 'legacy',
      rolloutId: '',
      component: 'Bad Name',
      componentKind: 'model',
      target: 'x',
      digest: 'md5:1' as never,
      length: -1,
    });
    expect(out).toMatchObject({ status: 'refused', code: 'ASSIGNMENT_INVALID' });
    if (out.status !== 'refused') throw new Error('unreachable');
    for (const f of ['rollout_id', 'component', 'digest', 'length']) expect(out.reason).toContain(f);
  });
});
