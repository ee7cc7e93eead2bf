import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useParams } from 'react-router';
import { api, ok } from '../api/client';
import { useCan } from '../api/session';
import { Badge, ConfirmButton, ErrorNote, Guard, Loading, PageTitle, Pager, Table, When, useListParams } from '../ui/kit';
import { RolloutProgress } from './rollouts';

const LIVE = new Set(['running', 'awaiting_approval', 'paused']);

/** One rollout, polled while it runs: waves and gates, per-device state, controls. */
export function RolloutPage() {
  const id = useParams().id!;
  const list = useListParams();
  const client = useQueryClient();
  const can = useCan('rollouts.write');
  const query = { limit: list.limit, offset: list.offset };
  const rollout = useQuery({
    queryKey: ['rollout', id, query],
    queryFn: () => ok(api.GET('/api/v1/rollouts/{id}', { params: { path: { id }, query } })),
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
    onSuccess: () => client.invalidateQueries({ queryKey: ['rollout', id] }),
  });
  const r = rollout.data;
  return (
    <>
      <PageTitle>{r ? `Rollout of ${r.component}` : 'Rollout'}</PageTitle>
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
            <dt>Kind</dt>
            <dd>{r.kind}</dd>
            <dt>Evidence</dt>
            <dd>{r.evidence === 'signed-receipt' ? 'device-signed receipts' : 'device-reported results only (no device signature)'}</dd>
            {r.transaction_id && (
              <>
                <dt>Transaction</dt>
                <dd>
                  <Link to={`/transactions/${r.transaction_id}`}>{r.transaction_id}</Link>
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
                question="Approve the next wave? Its devices start installing at their next check-in."
                confirm="Approve"
                onConfirm={() => control.mutate('approve')}
              />
              <ConfirmButton
                label="Resume…"
                disabled={r.status !== 'paused'}
                question="Resume this paused rollout?"
                confirm="Resume"
                onConfirm={() => control.mutate('resume')}
              />
              <ConfirmButton
                label="Abort…"
                danger
                disabled={!LIVE.has(r.status)}
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
            <Table head={['#', 'Name', 'Devices', 'Gate', 'State', 'Done', 'Failed']}>
              {r.waves.map((w) => (
                <tr key={w.index}>
                  <td>{w.index}</td>
                  <td>{w.name}</td>
                  <td>{w.size}</td>
                  <td>{w.requires_approval ? 'approval' : '—'}</td>
                  <td>
                    <Badge value={w.state} />
                  </td>
                  <td>{w.done}</td>
                  <td>{w.failed}</td>
                </tr>
              ))}
            </Table>
          </section>
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
