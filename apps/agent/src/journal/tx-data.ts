import {
  COMPONENT_KINDS,
  isDigest,
  validateDeliveryReport,
  type ActivationOutcome,
  type Digest,
  type HealthVerdict,
  type MemberDelivery,
} from '@svc/release-core';
import { AgentError } from '../errors.js';
import type { DriverFacts, MemberSpec, PlacementAccess } from '../drivers/driver.js';
import type { ProbeResult } from '../health/probes.js';

/*
 * What the journal records about a transaction, typed. Every record carries a patch of these
 * fields; folding the patches in order gives `TxData`. Field names are persisted: never
 * renamed, new ones are optional.
 */

/** A member with its place in the activation order. */
export interface PlannedMember extends MemberSpec {
  group: number;
  position: number;
}

export interface DesiredState {
  /** signed: a verified release; legacy: a rollout without a release pointer (spec §2.2 rule 3). */
  kind: 'signed' | 'legacy';
  tenant: string;
  /** null for legacy work: nothing about it is customer-signed. */
  release: { product: string; version: string; payload_digest: Digest; envelope_digest: Digest } | null;
  transaction: { id: string; member_count: number };
  members: PlannedMember[];
  /** The release's health policy as signed; `parseHealthPolicy` bounds it when it is used. */
  health: unknown;
}

export type Verdict = 'committed' | 'rolled-back' | 'failed' | 'not-attempted';

/** What the journal knows about one member (stored under `member:<component>`). */
export interface MemberRecord {
  /** Activation was started: it must be rolled back on failure. */
  attempted: boolean;
  /** Activation returned. */
  activated: boolean;
  previous_digest: Digest | null;
  resulting_digest: Digest | null;
  verdict: Verdict;
  facts: DriverFacts;
}

export interface TxFailure {
  code: string;
  message: string;
  /** The field, member or probe the failure is about (AgentError.field). */
  component: string | null;
}

/** Facts recorded after the desired state; each record may carry any subset. */
export interface TxFacts {
  /** The activation group being activated or checked. */
  group?: number;
  failure?: TxFailure | null;
  /** A rollback in progress is followed by a new activation (interrupted, not failed). */
  retry?: boolean;
  retries?: number;
  health_verdict?: HealthVerdict;
  activation?: ActivationOutcome;
  outbox_file?: string;
  rebooted_after_rollback?: boolean;
  /** The durable download bytes (all members) when a restart last resumed the transaction. */
  download_mark?: number;
  [member: `member:${string}`]: MemberRecord;
  [health: `health:${number}`]: ProbeResult[];
  /** How a member's bytes arrived (docs/delta-updates.md), journaled once it is downloaded. */
  [delivery: `delivery:${string}`]: MemberDelivery;
  /** A member's download in progress (staging/resume.ts): its durable offset and attempts. */
  [download: `download:${string}`]: DownloadProgress;
}

/** Which target of a member a download fetches: the member itself or the delta to it. */
export type DownloadTarget = 'full' | 'delta';

/**
 * A download's journaled progress: `offset` bytes of the target are fsynced in its file, so a
 * restart continues from there; the attempt counters bound retries across restarts.
 */
export interface DownloadProgress {
  /** The target this progress is about; the same member's other target has its own key. */
  target: DownloadTarget;
  /** Bytes at the start of the file that are on disk (fsynced) and need not be fetched again. */
  offset: number;
  /** Attempts started (each one a GetFile from `offset`). */
  attempts: number;
  /** Attempts in a row that ended without moving `offset` (reset by any progress). */
  stalled: number;
  /** Attempts that continued from kept bytes (offset > 0). */
  resumes: number;
  /** Bytes received over all attempts, counted at each checkpoint. */
  received: number;
  /** What the last failed attempt said. */
  last_error?: string;
}

export interface TxData extends TxFacts {
  desired: DesiredState;
}

/** One record's data: the first record of a transaction carries `desired`. */
export type TxPatch = TxFacts & { desired?: DesiredState };

export function memberKey(component: string): `member:${string}` {
  return `member:${component}`;
}

export function deliveryKey(component: string): `delivery:${string}` {
  return `delivery:${component}`;
}

export function downloadKey(component: string, target: DownloadTarget): `download:${string}` {
  return target === 'full' ? `download:${component}` : `download:${component}:delta`;
}

/** The bytes every download of the transaction holds durably (the sum of the journaled offsets). */
export function durableDownloadBytes(data: TxFacts): number {
  let total = 0;
  for (const [k, v] of Object.entries(data)) if (k.startsWith('download:')) total += (v as DownloadProgress).offset;
  return total;
}

export function memberRecord(data: TxFacts, component: string): MemberRecord {
  return (
    data[memberKey(component)] ?? { attempted: false, activated: false, previous_digest: null, resulting_digest: null, verdict: 'not-attempted', facts: {} }
  );
}

// ---- decoding: a journal line is read back field by field, never cast ----

const VERDICTS: readonly Verdict[] = ['committed', 'rolled-back', 'failed', 'not-attempted'];
const HEALTH_VERDICTS: readonly HealthVerdict[] = ['healthy', 'unhealthy', 'not-checked'];
const OUTCOMES: readonly ActivationOutcome[] = ['activated', 'rolled-back', 'failed'];

/** Collects every bad field of one record; each reader returns a typed value (a placeholder when bad). */
class Reader {
  readonly issues: string[] = [];

  bad(path: string, msg: string): void {
    this.issues.push(`${path}: ${msg}`);
  }

  object(v: unknown, path: string, required: readonly string[], optional: readonly string[] = []): Record<string, unknown> {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) {
      this.bad(path, 'must be an object');
      return {};
    }
    const o = v as Record<string, unknown>;
    for (const k of required) if (!Object.hasOwn(o, k)) this.bad(`${path}.${k}`, 'missing');
    for (const k of Object.keys(o)) if (!required.includes(k) && !optional.includes(k)) this.bad(`${path}.${k}`, 'unknown field');
    return o;
  }

  string(v: unknown, path: string): string {
    if (typeof v === 'string') return v;
    this.bad(path, 'must be a string');
    return '';
  }

  int(v: unknown, path: string): number {
    if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return v;
    this.bad(path, 'must be an integer >= 0');
    return 0;
  }

  bool(v: unknown, path: string): boolean {
    if (typeof v === 'boolean') return v;
    this.bad(path, 'must be a boolean');
    return false;
  }

  digest(v: unknown, path: string): Digest {
    if (isDigest(v)) return v;
    this.bad(path, 'must be sha256:<64 hex>');
    return 'sha256:';
  }

  nullable<T>(v: unknown, read: (v: unknown) => T): T | null {
    return v === null ? null : read(v);
  }

  oneOf<T extends string>(v: unknown, path: string, allowed: readonly T[]): T {
    const hit = allowed.find((a) => a === v);
    if (hit !== undefined) return hit;
    this.bad(path, `must be one of ${allowed.join(', ')}`);
    return allowed[0]!;
  }

  array<T>(v: unknown, path: string, item: (v: unknown, path: string) => T): T[] {
    if (!Array.isArray(v)) {
      this.bad(path, 'must be an array');
      return [];
    }
    return v.map((x, i) => item(x, `${path}[${i}]`));
  }

  facts(v: unknown, path: string): DriverFacts {
    const o = typeof v === 'object' && v !== null && !Array.isArray(v) ? v : (this.bad(path, 'must be an object'), {});
    const out: DriverFacts = {};
    for (const [k, x] of Object.entries(o) as [string, unknown][]) {
      if (x === null || typeof x === 'string' || typeof x === 'number' || typeof x === 'boolean') out[k] = x;
      else this.bad(`${path}.${k}`, 'must be a string, number, boolean or null');
    }
    return out;
  }
}

/** The signed placement mode, owner and group of a file member. */
function access(r: Reader, v: unknown, at: string): PlacementAccess {
  const o = r.object(v, at, [], ['mode', 'owner', 'group']);
  return {
    ...(o.mode !== undefined ? { mode: r.string(o.mode, `${at}.mode`) } : {}),
    ...(o.owner !== undefined ? { owner: r.string(o.owner, `${at}.owner`) } : {}),
    ...(o.group !== undefined ? { group: r.string(o.group, `${at}.group`) } : {}),
  };
}

function member(r: Reader, v: unknown, at: string): PlannedMember {
  const o = r.object(v, at, ['component', 'kind', 'rolloutId', 'target', 'digest', 'length', 'mediaType', 'group', 'position'], ['placement', 'access']);
  return {
    component: r.string(o.component, `${at}.component`),
    kind: r.oneOf(o.kind, `${at}.kind`, COMPONENT_KINDS),
    rolloutId: r.string(o.rolloutId, `${at}.rolloutId`),
    target: r.string(o.target, `${at}.target`),
    digest: r.digest(o.digest, `${at}.digest`),
    length: r.int(o.length, `${at}.length`),
    mediaType: r.string(o.mediaType, `${at}.mediaType`),
    ...(o.placement !== undefined ? { placement: r.string(o.placement, `${at}.placement`) } : {}),
    ...(o.access !== undefined ? { access: access(r, o.access, `${at}.access`) } : {}),
    group: r.int(o.group, `${at}.group`),
    position: r.int(o.position, `${at}.position`),
  };
}

function desired(r: Reader, v: unknown, at: string): DesiredState {
  const o = r.object(v, at, ['kind', 'tenant', 'release', 'transaction', 'members', 'health']);
  const rel = (x: unknown) => {
    const p = r.object(x, `${at}.release`, ['product', 'version', 'payload_digest', 'envelope_digest']);
    return {
      product: r.string(p.product, `${at}.release.product`),
      version: r.string(p.version, `${at}.release.version`),
      payload_digest: r.digest(p.payload_digest, `${at}.release.payload_digest`),
      envelope_digest: r.digest(p.envelope_digest, `${at}.release.envelope_digest`),
    };
  };
  const t = r.object(o.transaction, `${at}.transaction`, ['id', 'member_count']);
  const members = r.array(o.members, `${at}.members`, (x, p) => member(r, x, p));
  if (members.length === 0) r.bad(`${at}.members`, 'must not be empty');
  return {
    kind: r.oneOf(o.kind, `${at}.kind`, ['signed', 'legacy'] as const),
    tenant: r.string(o.tenant, `${at}.tenant`),
    release: r.nullable(o.release, rel),
    transaction: { id: r.string(t.id, `${at}.transaction.id`), member_count: r.int(t.member_count, `${at}.transaction.member_count`) },
    members,
    health: o.health,
  };
}

function memberRec(r: Reader, v: unknown, at: string): MemberRecord {
  const o = r.object(v, at, ['attempted', 'activated', 'previous_digest', 'resulting_digest', 'verdict', 'facts']);
  return {
    attempted: r.bool(o.attempted, `${at}.attempted`),
    activated: r.bool(o.activated, `${at}.activated`),
    previous_digest: r.nullable(o.previous_digest, (x) => r.digest(x, `${at}.previous_digest`)),
    resulting_digest: r.nullable(o.resulting_digest, (x) => r.digest(x, `${at}.resulting_digest`)),
    verdict: r.oneOf(o.verdict, `${at}.verdict`, VERDICTS),
    facts: r.facts(o.facts, `${at}.facts`),
  };
}

function probeResult(r: Reader, v: unknown, at: string): ProbeResult {
  const o = r.object(v, at, ['name', 'ok', 'detail']);
  return { name: r.string(o.name, `${at}.name`), ok: r.bool(o.ok, `${at}.ok`), detail: r.string(o.detail, `${at}.detail`) };
}

function downloadProgress(r: Reader, v: unknown, at: string): DownloadProgress {
  const o = r.object(v, at, ['target', 'offset', 'attempts', 'stalled', 'resumes', 'received'], ['last_error']);
  return {
    target: r.oneOf(o.target, `${at}.target`, ['full', 'delta'] as const),
    offset: r.int(o.offset, `${at}.offset`),
    attempts: r.int(o.attempts, `${at}.attempts`),
    stalled: r.int(o.stalled, `${at}.stalled`),
    resumes: r.int(o.resumes, `${at}.resumes`),
    received: r.int(o.received, `${at}.received`),
    ...(o.last_error !== undefined ? { last_error: r.string(o.last_error, `${at}.last_error`) } : {}),
  };
}

function failure(r: Reader, v: unknown, at: string): TxFailure {
  const o = r.object(v, at, ['code', 'message', 'component']);
  return {
    code: r.string(o.code, `${at}.code`),
    message: r.string(o.message, `${at}.message`),
    component: r.nullable(o.component, (x) => r.string(x, `${at}.component`)),
  };
}

/**
 * Reads the `data` of one journal record; every bad or unknown field is named in one
 * JOURNAL_CORRUPT error (`where` says which line).
 */
export function decodeTxPatch(value: unknown, where: string): TxPatch {
  const r = new Reader();
  const out: TxPatch = {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) r.bad('data', 'must be an object');
  for (const [k, v] of Object.entries(value ?? {})) {
    const at = `data.${k}`;
    if (k.startsWith('member:') && k.length > 7) out[memberKey(k.slice(7))] = memberRec(r, v, at);
    else if (k.startsWith('delivery:') && k.length > 9) {
      try {
        out[deliveryKey(k.slice(9))] = validateDeliveryReport({ members: [v] }).members[0]!;
      } catch (e) {
        r.bad(at, (e as Error).message);
      }
    } else if (k.startsWith('download:') && k.length > 9) out[k as `download:${string}`] = downloadProgress(r, v, at);
    else if (/^health:\d+$/.test(k)) out[`health:${Number(k.slice(7))}`] = r.array(v, at, (x, p) => probeResult(r, x, p));
    else if (k === 'desired') out.desired = desired(r, v, at);
    else if (k === 'group') out.group = r.int(v, at);
    else if (k === 'failure') out.failure = r.nullable(v, (x) => failure(r, x, at));
    else if (k === 'retry') out.retry = r.bool(v, at);
    else if (k === 'retries') out.retries = r.int(v, at);
    else if (k === 'health_verdict') out.health_verdict = r.oneOf(v, at, HEALTH_VERDICTS);
    else if (k === 'activation') out.activation = r.oneOf(v, at, OUTCOMES);
    else if (k === 'outbox_file') out.outbox_file = r.string(v, at);
    else if (k === 'rebooted_after_rollback') out.rebooted_after_rollback = r.bool(v, at);
    else if (k === 'download_mark') out.download_mark = r.int(v, at);
    else r.bad(at, 'unknown field');
  }
  if (r.issues.length > 0) {
    throw new AgentError('JOURNAL_CORRUPT', `${where}: ${r.issues.join('; ')}`, { field: r.issues[0]!.split(':')[0]! });
  }
  return out;
}
