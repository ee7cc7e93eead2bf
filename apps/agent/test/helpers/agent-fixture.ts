import { join } from 'node:path';
import type { PublicKey } from '@svc/release-core';
import { Journal, Orchestrator, type DriverRegistry, type HealthChecker, type SignedAssignment, type TargetFetcher } from '../../src/index.js';
import { PRODUCT, PROFILE, TENANT, type BuiltRelease, type DeviceFixture } from './release-fixture.js';

export async function makeOrchestrator(opts: {
  dataDir: string;
  device: DeviceFixture;
  drivers: DriverRegistry;
  fetcher: TargetFetcher;
  trustedKeys: PublicKey[] | null;
  health?: HealthChecker;
  maxResumptions?: number;
  downloadAttempts?: number;
}): Promise<{ orchestrator: Orchestrator; journal: Journal }> {
  const journal = await Journal.open(join(opts.dataDir, 'journal'));
  const orchestrator = new Orchestrator({
    dataDir: opts.dataDir,
    journal,
    release:
      opts.trustedKeys === null
        ? null
        : { settings: { tenant: TENANT, product: PRODUCT, profile: PROFILE, trustDir: '/nonexistent' }, trustedKeys: opts.trustedKeys },
    fetcher: opts.fetcher,
    drivers: opts.drivers,
    device: opts.device,
    ...(opts.health ? { health: opts.health } : {}),
    ...(opts.maxResumptions ? { maxResumptions: opts.maxResumptions } : {}),
    ...(opts.downloadAttempts ? { downloadAttempts: opts.downloadAttempts } : {}),
    // retries of a download wait nothing in tests
    downloadBackoffMs: () => 0,
  });
  return { orchestrator, journal };
}

/** The assignment the server would send for a release: every member, in activation order. */
export function assignmentFor(rel: BuiltRelease, txId = 'tx-1', drop: string[] = []): SignedAssignment {
  const groups = (rel.payload.activation as { ordered_groups: string[][] }).ordered_groups;
  const members: SignedAssignment['members'] = [];
  groups.forEach((g, gi) => g.forEach((component) => members.push({ rolloutId: `ro-${component}`, component, group: gi, position: members.length })));
  return {
    kind: 'signed',
    transactionId: txId,
    memberCount: members.length,
    members: members.filter((m) => !drop.includes(m.component)),
    envelope: rel.envelope,
  };
}
