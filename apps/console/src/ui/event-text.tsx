/**
 * Audit events and device history in words: one renderer per action, the raw JSON behind a
 * disclosure. An action without a renderer reads as its name and its scalar details.
 */
import { Mono } from './kit';

type Detail = Record<string, unknown>;

const s = (v: unknown): string =>
  typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : v == null ? '' : JSON.stringify(v);
const n = (v: unknown, one: string, many = `${one}s`): string => `${s(v)} ${v === 1 ? one : many}`;
const short = (v: unknown): string => {
  const t = s(v);
  const colon = t.indexOf(':');
  return colon >= 0 && t.length > colon + 13 ? `${t.slice(0, colon + 13)}…` : t;
};
const state = (v: unknown): string => s(v).replace(/_/g, ' ');

/** Sentences of the actions an operator meets daily; others fall back to `fallback`. */
const RENDERERS: Record<string, (d: Detail, target: string) => string> = {
  'rollout.start': (d) =>
    `Started a ${s(d.kind)} rollout to ${n(d.devices, 'device')}${d.decommissioned ? ` (${n(d.decommissioned, 'decommissioned device')} left out)` : ''}`,
  // a wave pauses only when its failures go over the release's failure threshold
  'rollout.wave': (d) => `Wave ${s(d.wave)} went from ${state(d.from)} to ${state(d.to)}${d.to === 'paused' ? ': its failures went over the threshold' : ''}`,
  'rollout.approve': (d) => `Approved the next wave; the rollout is ${state(d.status)}`,
  'rollout.resume': (d) => `Resumed the rollout; it is ${state(d.status)}`,
  'rollout.abort': () => 'Aborted the rollout',
  'rollout.device-skip': (d) => `Device ${s(d.device)} was skipped in wave ${s(d.wave)} (${s(d.reason)})`,
  'rollout.legacy-status': (d) => `Device reported ${s(d.status)} (device-reported, not signed)`,
  'release-receipt.accept': (d) => `Accepted a signed receipt: ${s(d.activation)}, health ${s(d.health)}`,
  'release.publish': (d) => `Published release ${s(d.product)} ${s(d.version)} (envelope ${short(d.envelope_digest)})`,
  'artifact.publish': (d) => `Published ${s(d.kind)} artifact ${s(d.name)} ${s(d.version)} (${short(d.digest)})`,
  'artifact.import': (d) => `Imported ${s(d.repository)}:${s(d.tag)} from registry ${s(d.registry)} (${short(d.digest)})`,
  'artifact.update': (d) => `Changed ${Array.isArray(d.fields) ? d.fields.join(', ') : 'fields'} of the artifact`,
  'artifact.sbom.attach': (d) => `Attached a ${s(d.format)} SBOM (${short(d.digest)})`,
  'group.create': (d) =>
    d.filter === undefined
      ? `Created group ${s(d.name)} with ${n(d.members, 'member')}`
      : `Created dynamic group ${s(d.name)} (${s(d.filter)}): ${n(d.members, 'member')}`,
  'group.refresh': (d) => `Refreshed the dynamic group: ${s(d.added)} added, ${s(d.removed)} removed, ${n(d.members, 'member')} now`,
  'group.members.add': (d) => `Added ${n(d.added, 'device')} to the group`,
  'group.members.remove': (d) => `Removed ${n(d.removed, 'device')} from the group`,
  'group.delete': (d) => `Deleted group ${s(d.name)} (${n(d.members, 'member')})`,
  'device.enroll': (d) => `Enrolled; certificate valid until ${s(d.not_after)}`,
  'device.certificate.renew': (d) => `Renewed the device certificate; valid until ${s(d.not_after)}`,
  'device.decommission': () => 'Decommissioned the device',
  'device.log-request': () => 'Requested a log bundle',
  'device.tag.add': (d) => `Tagged ${s(d.tag)}`,
  'device.tag.remove': (d) => `Removed the tag ${s(d.tag)}`,
  'device.bulk.create': (d) =>
    `Started a bulk ${BULK_WORDS[s(d.action)] ?? s(d.action)} on ${n(d.total, 'device')}${d.filter ? ` matching ${s(d.filter)}` : ''}${d.tag ? ` (tag ${s(d.tag)})` : ''}`,
  'device.bulk.complete': (d) => `Finished a bulk ${BULK_WORDS[s(d.action)] ?? s(d.action)}: ${s(d.succeeded)} done, ${s(d.failed)} failed of ${s(d.total)}`,
  'device.log-bundle.upload': (d) => `Uploaded a log bundle (${n(d.length, 'byte')})`,
  'enroll-token.create': (d) => `Created an enrollment token for ${n(d.max_uses, 'use')}, expiring ${s(d.expires_at)}`,
  'enroll-token.delete': () => 'Deleted an enrollment token',
  'user.create': (d) => `Created user ${s(d.email)} as ${s(d.role)}`,
  'user.delete': (d) => `Deleted user ${s(d.email)}`,
  'user.role.change': (d) => `Changed the role of ${s(d.email)} from ${s(d.from)} to ${s(d.to)}`,
  'api-key.create': (d) => `Created API key ${s(d.name)} (${s(d.role)})`,
  'api-key.revoke': () => 'Revoked an API key',
  'authorizer-key.register': (d) => `Registered authorizer key ${s(d.name)} (${short(d.keyid)})`,
  'authorizer-key.revoke': (d) => `Revoked authorizer key ${short(d.keyid)}`,
  'session.login': () => 'Signed in',
  'session.logout': () => 'Signed out',
  'case.open': (d) => `Opened a ${state(d.kind)} case: ${s(d.title)}`,
  'case.assess': (d) => `Assessed the case: ${state(d.outcome)} (was ${state(d.from)})`,
  'case.close': (d) => `Closed the case: ${s(d.reason)}`,
  'case.reopen': (d) => `Reopened the case (was ${state(d.from)}): ${s(d.reason)}`,
  'case.awareness-correct': (d) => `Corrected the awareness time from ${s(d.from)} to ${s(d.to)}: ${s(d.reason)}`,
  'case.submission-create': (d) => `Drafted the ${state(d.stage)} submission`,
  'device-ca.rotate': () => 'Rotated the device CA; the old CA stays trusted until its last certificate expires',
};

/** A bulk action's name in words (`device.bulk.<action>`, the console's bulk form). */
export const BULK_WORDS: Record<string, string> = {
  'group.add': 'add to group',
  'group.remove': 'remove from group',
  tag: 'tag',
  untag: 'tag removal',
  logs: 'log request',
  decommission: 'decommission',
};

/** One device's step of a bulk job: `device.bulk.<action>` with its outcome. */
const bulkStep = (action: string, d: Detail): string =>
  `Bulk ${BULK_WORDS[action] ?? action}: ${s(d.outcome)}${d.detail !== undefined ? ` (${s(d.detail)})` : ''}`;

/** What an event did, in words. */
export function eventText(action: string, target: string, detail: Detail | null | undefined): string {
  const d = detail ?? {};
  const render = RENDERERS[action];
  if (render) return render(d, target);
  if (action.startsWith('device.bulk.')) return bulkStep(action.slice('device.bulk.'.length), d);
  const facts = Object.entries(d)
    .filter(([, v]) => v === null || typeof v !== 'object')
    .map(([k, v]) => `${k.replace(/_/g, ' ')}: ${s(v)}`);
  return `${action.replace(/[.-]/g, ' ')}${facts.length > 0 ? ` (${facts.join(', ')})` : ''}`;
}

/** The raw JSON of an event's detail behind a disclosure; nothing for an empty detail. */
function RawDetail({ detail }: { detail: Detail | null | undefined }) {
  if (detail == null || Object.keys(detail).length === 0) return null;
  return (
    <details className="event-raw">
      <summary>Raw detail</summary>
      <Mono>{JSON.stringify(detail, null, 1)}</Mono>
    </details>
  );
}

/** An event's sentence with its raw detail behind a disclosure. */
export function EventDetail({ action, target, detail }: { action: string; target: string; detail: Detail | null | undefined }) {
  return (
    <>
      {eventText(action, target, detail)}
      <RawDetail detail={detail} />
    </>
  );
}

/** A device history entry's sentence with its raw detail behind a disclosure. */
export function HistoryDetail({ event, detail }: { event: string; detail: Detail | null | undefined }) {
  return (
    <>
      {historyText(event, detail)}
      <RawDetail detail={detail} />
    </>
  );
}

/** Device history entries (`enrolled`, `online`, `offline`, `decommissioned`) in words. */
export function historyText(event: string, detail: Detail | null | undefined): string {
  const d = detail ?? {};
  switch (event) {
    case 'enrolled':
      return 'Enrolled';
    case 'online':
      return 'Came online';
    case 'offline':
      return 'Went offline (no check-in within the offline bound)';
    case 'decommissioned':
      return d.by ? `Decommissioned by ${s(d.by)}` : 'Decommissioned';
    default:
      return eventText(event, '', d);
  }
}
