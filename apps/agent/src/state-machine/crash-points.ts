import { channel } from 'node:diagnostics_channel';
import type { State } from './states.js';

export interface CrashPointSpec {
  /** What the journal holds when the process dies here; a restart does `RECOVERY[state]`. */
  states: readonly State[];
  /** Where in the sequence the point is, in one phrase. */
  at: string;
}

/**
 * Named points of the transaction sequence where the crash tables kill the agent. `<group>`
 * stands for an activation group index. docs/agent.md lists every point with what the agent
 * does after it; a test keeps that list equal to this table.
 */
export const CRASH_POINTS = {
  'after-desired-state-persisted': { states: ['desired-persisted'], at: 'the verified desired state is journaled, nothing else' },
  'previous-digests-recorded': { states: ['desired-persisted'], at: "every member's live digest is journaled, the download not started" },
  'mid-download': { states: ['downloading'], at: 'the TUF target fetcher wrote part of a target into its .part file and journaled that offset' },
  'after-download': { states: ['downloaded'], at: 'every member is downloaded and verified' },
  'after-stage': { states: ['staged'], at: 'every member is staged, nothing activated' },
  'mid-driver-write': {
    states: ['activating'],
    at: "a driver linked the new file (a placed file, a container's kept image archive) beside the live one, before the rename that makes it live",
  },
  'mid-activation-<group>': { states: ['activating'], at: 'the first member of the group is activated, the others not' },
  'reboot-requested': { states: ['awaiting-reboot'], at: 'an os-bundle is installed into the other slot and the reboot was requested' },
  'before-health-<group>': { states: ['group-activated'], at: 'every member of the group is live, its health not checked' },
  'after-health-<group>': { states: ['group-healthy'], at: 'the group passed its health probes' },
  'mid-commit': { states: ['committing'], at: 'the first member is committed, the others not' },
  'mid-rollback': { states: ['rolling-back'], at: 'the first attempted member is restored, the others not' },
  'before-receipt': { states: ['committed', 'rolled-back', 'failed'], at: 'the outcome is journaled, the receipt not written' },
  'after-receipt-before-upload': { states: ['receipt-persisted'], at: 'the signed receipt is in the outbox, not uploaded' },
} as const satisfies Record<string, CrashPointSpec>;

/**
 * Crash points of certificate renewal (the channel runtime, outside any transaction): the
 * e2e renewal test kills the agent between receiving a renewed certificate and saving it.
 */
export const RENEWAL_CRASH_POINTS = {
  'renewal-received': 'the renewed certificate arrived over the channel, not yet saved',
  'renewal-saved': 'the renewed certificate is saved, the channel not yet reconnected with it',
} as const;
export type RenewalCrashPoint = keyof typeof RENEWAL_CRASH_POINTS;

type Pattern = keyof typeof CRASH_POINTS;
/** A crash point as it is reached: `<group>` replaced by the group index. */
export type CrashPoint = { [K in Pattern]: K extends `${infer P}<group>` ? `${P}${number}` : K }[Pattern];

/**
 * Where crash points are published (node:diagnostics_channel). The agent itself never
 * subscribes: only a test harness does (a module preloaded with `node --import`, or the test
 * process), so nothing in the shipped agent can stop the process at a crash point.
 */
export const CRASH_POINT_CHANNEL = 'svc-agent:crash-point';

export interface CrashPointMessage {
  point: CrashPoint | RenewalCrashPoint;
  /** The transaction, when the code that reached the point knows it. */
  tx: string | null;
}

const points = channel(CRASH_POINT_CHANNEL);

/** Announces that the sequence reached `point`; free when nobody listens. */
export function crashPoint(point: CrashPoint | RenewalCrashPoint, tx: string | null = null): void {
  if (points.hasSubscribers) points.publish({ point, tx } satisfies CrashPointMessage);
}

/** The table row a reached point belongs to (`mid-activation-1` -> `mid-activation-<group>`). */
export function crashPointPattern(point: string): Pattern | undefined {
  const patterns = Object.keys(CRASH_POINTS) as Pattern[];
  return patterns.find((p) => p === point) ?? patterns.find((p) => p.endsWith('<group>') && new RegExp(`^${p.replace('<group>', '\\d+')}$`).test(point));
}
