import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useParams } from 'react-router';
import { api, ok } from '../api/client';
import { rolloutQueries } from '../api/queries/rollouts';
import { useCan } from '../api/session';
import { Badge, ConfirmButton, ErrorNote, Guard, Loading, PageTitle, Pager, ShortId, Table, When, useListParams } from '../ui/kit';
import { EventDetail } from '../ui/event-text';
import { DeliverySummary } from '../ui/delivery';
import { RolloutProgress, rolloutTitle } from './rollouts';

const LIVE = new Set(['running', 'awaiting_approval', 'paused']);

/** One rollout, polled while it runs: waves and gates, per-device state, controls. */
export function RolloutPage() {
  const id = useParams().id!;
  const list = useListParams();
  const client = useQueryClient();
  const can = useCan('rollouts.write');
  const query = { limit: list.limit, offset: list.offset };
  const rollout = useQuery({
    ...rolloutQueries.detail(id, query),
    placeholderData: keepPreviousData,
    refetchInterval: (q) => (q.state.data && !LIVE.has(q.state.data.status) ? false : 2_000),
  });
  const control = useMutation({
    mutationFn: (action: 'approve' | 'resume' | 'abort') => {
      const params = { params: { path: { id } } };
      if (action === 'approve') return ok(api.POST('/api/v1/rollouts/{id}/approve', params));
      if (action === 'resume') return ok(api.POST('/api/v1/rollouts/{id}/resume', params));
      return ok(api.POST('/api/v1/rollouts/{id}/abort', params));
    },
    onSuccess: () => client.invalidateQueries({ queryKey: rolloutQueries.keys.detail(id) }),
  });
  const r = rollout.data;
  return (
    <>
      <PageTitle>{r ? `Rollout of ${rolloutTitle(r)}` : 'Rollout'}</PageTitle>
      <ErrorNote error={rollout.error} />
      {rollout.isPending ? (
        <Loading what="the rollout" />
      ) : r ? (
        <>
          <dl className="facts">
            <dt>Status</dt>
            <dd aria-live="polite">
              <Badge value={r.status} />
            </dd>
            <dt>Release</dt>
            <dd>
              {r.product} {r.version}
              {r.release_id && (
                <>
                  {' '}
                  (<Link to={`/rollouts?release_id=${r.release_id}`}>its rollouts</Link>)
                </>
              )}
            </dd>
            <dt>Target group</dt>
            <dd>
              <Link to={`/groups/${r.group_id}`}>{r.group_name}</Link>
            </dd>
            <dt>Member</dt>
            <dd>
              {r.component} (position {r.position}
              {r.members.length > 1 ? ` of ${r.members.length} members` : ''})
            </dd>
            <dt>Kind</dt>
            <dd>{r.kind}</dd>
            <dt>Evidence</dt>
            <dd>{r.evidence === 'signed-receipt' ? 'device-signed receipts' : 'device-reported results only (no device signature)'}</dd>
            {r.transaction_id && (
              <>
                <dt>Transaction</dt>
                <dd>
                  <Link to={`/transactions/${r.transaction_id}`}>
                    Transaction of {r.product} {r.version}
                  </Link>{' '}
                  <ShortId value={r.transaction_id} label="transaction id" />
                </dd>
              </>
            )}
            <dt>Progress</dt>
            <dd>
              <RolloutProgress progress={r.progress} total={r.device_count} />
            </dd>
            <dt>Failure threshold</dt>
            <dd>
              {r.failure_threshold
                ? [
                    r.failure_threshold.count !== undefined ? `${r.failure_threshold.count} devices` : '',
                    r.failure_threshold.percent !== undefined ? `${r.failure_threshold.percent} %` : '',
                  ]
                    .filter(Boolean)
                    .join(' or ')
                : 'none'}
            </dd>
            <dt>Started</dt>
            <dd>
              <When at={r.created_at} />
            </dd>
          </dl>
          <Guard perm="rollouts.write" legend="Control">
            <div className="row">
              <ConfirmButton
                label="Approve next wave…"
                disabled={r.status !== 'awaiting_approval'}
                disabledReason={`No wave is waiting for approval: the rollout is ${r.status.replace(/_/g, ' ')}`}
                question="Approve the next wave? Its devices start installing at their next check-in."
                confirm="Approve"
                onConfirm={() => control.mutate('approve')}
              />
              <ConfirmButton
                label="Resume…"
                disabled={r.status !== 'paused'}
                disabledReason={`The rollout is ${r.status.replace(/_/g, ' ')}, not paused`}
                question="Resume this paused rollout?"
                confirm="Resume"
                onConfirm={() => control.mutate('resume')}
              />
              <ConfirmButton
                label="Abort…"
                danger
                disabled={!LIVE.has(r.status)}
                disabledReason={`The rollout has ended (${r.status})`}
                question="Abort this rollout? Devices not yet updated will not be; this cannot be undone."
                confirm="Abort rollout"
                onConfirm={() => control.mutate('abort')}
              />
            </div>
            {can.ok && !LIVE.has(r.status) && <p className="muted">The rollout has ended; there is nothing to control.</p>}
            <ErrorNote error={control.error} />
          </Guard>
          {r.members.length > 1 && (
            <section aria-labelledby="members-h">
              <h2 id="members-h">Members in activation order</h2>
              <ol>
                {r.members.map((m) => (
                  <li key={m.rollout_id}>
                    {m.rollout_id === r.id ? <strong>{m.component}</strong> : <Link to={`/rollouts/${m.rollout_id}`}>{m.component}</Link>} (group {m.group},
                    position {m.position})
                  </li>
                ))}
              </ol>
            </section>
          )}
          <section aria-labelledby="waves-h">
            <h2 id="waves-h">Waves</h2>
            <Table head={['#', 'Name', 'Devices', 'Gate', 'State', 'Progress']}>
              {r.waves.map((w) => (
                <tr key={w.index}>
                  <td>{w.index}</td>
                  <td>{w.name}</td>
                  <td>{w.size}</td>
                  <td>{w.requires_approval ? 'approval' : '—'}</td>
                  <td>
                    <Badge value={w.state} />
                  </td>
                  <td>
                    <WaveProgress done={w.done} failed={w.failed} size={w.size} />
                  </td>
                </tr>
              ))}
            </Table>
          </section>
          <Delivery id={id} live={LIVE.has(r.status)} />
          <Activity
            id={id}
            live={LIVE.has(r.status)}
            seen={`${r.status}:${r.progress.committed + r.progress.failed + r.progress.rolled_back + r.progress.installed + r.progress.skipped}`}
          />
          <section aria-labelledby="devices-h">
            <h2 id="devices-h">Devices</h2>
            <DeviceStates rows={r.devices} />
            <Pager label="devices" total={r.devices_total} offset={list.offset} limit={list.limit} onPage={(offset) => list.set({ offset })} />
          </section>
        </>
      ) : null}
    </>
  );
}

/** Devices of a rollout or transaction with their wave and state (and when it changed, if known). */
export function DeviceStates({ rows }: { rows: readonly { device: string; wave: number; state: string; updated_at?: string | null }[] }) {
  const withTime = rows.some((d) => d.updated_at !== undefined);
  return (
    <Table head={withTime ? ['Device', 'Wave', 'State', 'Updated'] : ['Device', 'Wave', 'State']}>
      {rows.map((d) => (
        <tr key={d.device}>
          <td>
            <Link to={`/devices/${encodeURIComponent(d.device)}`}>{d.device}</Link>
          </td>
          <td>{d.wave}</td>
          <td>
            <Badge value={d.state} />
          </td>
          {withTime && (
            <td>
              <When at={d.updated_at} />
            </td>
          )}
        </tr>
      ))}
    </Table>
  );
}

/** One wave's finished devices as a bar: done (green), failed (red) of its size. */
function WaveProgress({ done, failed, size }: { done: number; failed: number; size: number }) {
  const pct = (v: number) => `${size > 0 ? (v / size) * 100 : 0}%`;
  return (
    <span className="progress-cell">
      <span className="bar" aria-hidden="true">
        <span className="bar-ok" style={{ width: pct(done - failed) }} />
        <span className="bar-bad" style={{ width: pct(failed) }} />
      </span>
      <span>
        {done} of {size} done{failed > 0 ? `, ${failed} failed` : ''}
      </span>
    </span>
  );
}

/** How the rollout's bytes reached its devices: per path, transferred against the full size, and deltas made. */
function Delivery({ id, live }: { id: string; live: boolean }) {
  const delivery = useQuery({ ...rolloutQueries.delivery(id), refetchInterval: live ? 5_000 : false });
  const d = delivery.data;
  const deltas = d ? d.deltas.queued + d.deltas.building + d.deltas.ready + d.deltas.skipped + d.deltas.failed : 0;
  return (
    <section aria-labelledby="delivery-h">
      <h2 id="delivery-h">Delivery</h2>
      <ErrorNote error={delivery.error} />
      {delivery.isPending && <Loading what="the delivery" />}
      {d && (
        <>
          <DeliverySummary totals={d.totals} streamed={{ bytes: d.bundle_streams.reduce((n, b) => n + b.bytes_sent, 0), devices: d.bundle_streams_total }} />
          <p className="muted">
            {deltas === 0
              ? 'No delta was asked for at the start.'
              : `Deltas asked for at the start: ${deltas} (${d.deltas.ready} ready, ${d.deltas.queued + d.deltas.building} being made, ${d.deltas.skipped} skipped, ${d.deltas.failed} failed).`}
          </p>
        </>
      )}
    </section>
  );
}

/**
 * The rollout's timeline (from its audit rows) and its failed devices grouped by reason, read
 * again whenever the polled detail shows a new status or result (`seen`).
 */
function Activity({ id, live, seen }: { id: string; live: boolean; seen: string }) {
  const activity = useQuery({
    ...rolloutQueries.activity(id, seen),
    placeholderData: keepPreviousData,
    refetchInterval: live ? 5_000 : false,
  });
  const a = activity.data;
  return (
    <>
      <section aria-labelledby="failures-h">
        <h2 id="failures-h">Failures by reason</h2>
        <ErrorNote error={activity.error} />
        {a && a.failures.length === 0 && <p className="muted">No device has failed or rolled back.</p>}
        {a && a.failures.length > 0 && (
          <Table head={['Reason', 'Devices', 'First devices']}>
            {a.failures.map((f) => (
              <tr key={f.reason}>
                <td>{f.reason}</td>
                <td>{f.count}</td>
                <td>
                  {f.devices.map((d, i) => (
                    <span key={d}>
                      {i > 0 && ', '}
                      <Link to={`/devices/${encodeURIComponent(d)}`}>{d}</Link>
                    </span>
                  ))}
                  {f.count > f.devices.length && <span className="muted"> and {f.count - f.devices.length} more</span>}
                </td>
              </tr>
            ))}
          </Table>
        )}
      </section>
      <section aria-labelledby="timeline-h">
        <h2 id="timeline-h">Timeline</h2>
        {activity.isPending && <Loading what="the timeline" />}
        {a && (
          <ol className="timeline">
            {a.timeline.map((e) => (
              <li key={e.id}>
                <When at={e.at} /> <span className="muted">{e.actor}</span>: <EventDetail action={e.action} target={e.target} detail={e.detail} />
              </li>
            ))}
          </ol>
        )}
        {a?.timeline_truncated && <p className="muted">Only the oldest events are shown; the audit trail has the rest.</p>}
      </section>
    </>
  );
}
