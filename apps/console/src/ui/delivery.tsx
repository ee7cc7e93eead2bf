import { Link } from 'react-router';
import { Table, When } from './kit';

/** Bytes for people: B, KiB, MiB, GiB with at most one decimal. */
export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${n} B` : `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

/** `part` of `whole` as a percentage with one decimal ("—" for an empty whole). */
export function share(part: number, whole: number): string {
  return whole > 0 ? `${((part / whole) * 100).toFixed(1)}%` : '—';
}

export interface DeliveryTotal {
  method: string;
  members: number;
  bytes_transferred: number;
  full_length: number;
  fallbacks: number;
}

/**
 * A rollout's delivery: members delivered per path (full, delta, adaptive), bytes that crossed
 * the link against the members' full size, and the bytes saved, from the devices' reports;
 * bytes the bundle port streamed are the server's own count.
 */
export function DeliverySummary({ totals, streamed }: { totals: readonly DeliveryTotal[]; streamed?: { bytes: number; devices: number } }) {
  const sent = totals.reduce((n, t) => n + t.bytes_transferred, 0);
  const full = totals.reduce((n, t) => n + t.full_length, 0);
  const members = totals.reduce((n, t) => n + t.members, 0);
  if (members === 0 && !streamed?.devices) return <p className="muted">No device has reported a delivery yet.</p>;
  return (
    <>
      <dl className="facts" aria-label="Delivery totals">
        <dt>Members delivered</dt>
        <dd>{members}</dd>
        <dt>Transferred</dt>
        <dd>
          {formatBytes(sent)} of {formatBytes(full)} ({share(sent, full)} of the full size)
        </dd>
        <dt>Saved</dt>
        <dd>{full > sent ? `${formatBytes(full - sent)} (${share(full - sent, full)})` : 'nothing'}</dd>
        {streamed && streamed.devices > 0 && (
          <>
            <dt>Bundles streamed</dt>
            <dd>
              {formatBytes(streamed.bytes)} to {streamed.devices} device{streamed.devices === 1 ? '' : 's'} (counted by the server)
            </dd>
          </>
        )}
      </dl>
      {totals.length > 0 && (
        <Table head={['Path', 'Members', 'Transferred', 'Full size', 'Fallbacks']} caption="Delivered members per path">
          {totals.map((t) => (
            <tr key={t.method}>
              <td>{t.method}</td>
              <td>{t.members}</td>
              <td>{formatBytes(t.bytes_transferred)}</td>
              <td>{formatBytes(t.full_length)}</td>
              <td>{t.fallbacks}</td>
            </tr>
          ))}
        </Table>
      )}
    </>
  );
}

export interface MemberDelivery {
  component: string;
  rollout_id: string | null;
  method: string;
  bytes_transferred: number;
  full_length: number;
  fallback: string | null;
  failure: string | null;
  reported_at: string;
}

/** A device's last delivery of each member. */
export function DeviceDeliveries({ members }: { members: readonly MemberDelivery[] }) {
  if (members.length === 0) return <p className="muted">This device has reported no delivery yet.</p>;
  return (
    <Table head={['Member', 'Path', 'Transferred', 'Full size', 'Note', 'Reported']} caption="The last delivery of each member">
      {members.map((m) => (
        <tr key={m.component}>
          <td>{m.rollout_id ? <Link to={`/rollouts/${m.rollout_id}`}>{m.component}</Link> : m.component}</td>
          <td>{m.method}</td>
          <td>
            {formatBytes(m.bytes_transferred)} ({share(m.bytes_transferred, m.full_length)})
          </td>
          <td>{formatBytes(m.full_length)}</td>
          <td>{m.failure ? `failed: ${m.failure}` : m.fallback ? `fell back: ${m.fallback}` : '—'}</td>
          <td>
            <When at={m.reported_at} />
          </td>
        </tr>
      ))}
    </Table>
  );
}
