import type { ComponentKind, Digest } from '@svc/release-core';

/** One member as a driver sees it: the signed component plus its rollout. */
export interface MemberSpec {
  component: string;
  kind: ComponentKind;
  rolloutId: string;
  target: string;
  digest: Digest;
  length: number;
  mediaType: string;
  /** Where the component goes on the device, when the release names it. */
  placement?: string;
  /** The signed `placement.mode`, `owner` and `group` (contracts §2), applied to the placed file. */
  access?: PlacementAccess;
}

export interface PlacementAccess {
  /** Octal permission bits as signed, e.g. "0640". */
  mode?: string;
  /** Local user and group names, looked up in /etc/passwd and /etc/group on the device. */
  owner?: string;
  group?: string;
}

/** Facts a driver reports for the journal and receipt (OS slot fields, image ids...). */
export type DriverFacts = Record<string, string | number | boolean | null>;

export interface ActivationResult {
  /** os-bundle: the new slot takes effect after a reboot. */
  needsReboot: boolean;
  facts?: DriverFacts;
}

/**
 * The one interface every member kind is installed through. Every method is
 * idempotent: after a crash the orchestrator may call any of them again.
 */
export interface MemberDriver {
  readonly kind: ComponentKind;
  /** Digest of what is live now; null when nothing is installed (first install). */
  currentDigest(member: MemberSpec): Promise<Digest | null>;
  /**
   * The file of the live version, whose digest currentDigest reports, for a delta to be applied
   * to (docs/delta-updates.md): file members' live file, containers' kept image archive; null
   * when there is none. Kinds without it get full downloads.
   */
  deltaSource?(member: MemberSpec): Promise<string | null>;
  /** Prepares the verified staged file; nothing live changes. */
  stage(member: MemberSpec, stagedFile: string): Promise<DriverFacts | void>;
  /** Makes the staged version live, keeping the previous one for rollback. */
  activate(member: MemberSpec, facts: DriverFacts): Promise<ActivationResult>;
  /** os-bundle: asks the device to reboot into the new (or restored) slot. */
  reboot?(): Promise<void>;
  /** After a reboot (os-bundle): reports what booted. Others never need it. */
  confirmReboot?(member: MemberSpec, facts: DriverFacts): Promise<{ ok: boolean; facts: DriverFacts }>;
  /** Restores the previous version (or removes a first install). */
  rollback(member: MemberSpec, facts: DriverFacts): Promise<DriverFacts | void>;
  /** Drops the kept previous version. */
  commit(member: MemberSpec, facts: DriverFacts): Promise<DriverFacts | void>;
}

export type DriverRegistry = Partial<Record<ComponentKind, MemberDriver>>;
