import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { api, ok } from '../api/client';
import { Badge, ErrorNote, Loading, PageTitle, Table } from '../ui/kit';
import { RolloutProgress } from './rollouts';

/** Fleet at a glance: counts by status, online ratio, rollouts in flight (polled). */
export function DashboardPage() {
  // limit=1: the totals and counts come with any page; no device list is loaded
  const devices = useQuery({
    queryKey: ['devices', 'counts'],
    queryFn: () => ok(api.GET('/api/v1/devices', { params: { query: { limit: 1 } } })),
    refetchInterval: 10_000,
  });
  const rollouts = useQuery({
    queryKey: ['rollouts', 'dashboard'],
    queryFn: () => ok(api.GET('/api/v1/rollouts', { params: { query: { limit: 50 } } })),
    refetchInterval: 5_000,
  });
  const counts = devices.data?.counts;
  const live = counts ? counts.online + counts.offline : 0;
  const ratio = counts && live > 0 ? counts.online / live : 0;
  const inFlight = rollouts.data?.rollouts.filter((r) => r.status === 'running' || r.status === 'awaiting_approval' || r.status === 'paused') ?? [];
  return (
    <>
      <PageTitle>Fleet</PageTitle>
      <ErrorNote error={devices.error} />
      {devices.isPending ? (
        <Loading what="device counts" />
      ) : counts ? (
        <section aria-labelledby="counts-h" className="cards">
          <h2 id="counts-h" className="sr-only">
            Devices by status
          </h2>
          <Link className="card" to="/devices?status=online">
            <span className="big">{counts.online.toLocaleString()}</span> online
          </Link>
          <Link className="card" to="/devices?status=offline">
            <span className="big">{counts.offline.toLocaleString()}</span> offline
          </Link>
          <Link className="card" to="/devices?status=decommissioned">
            <span className="big">{counts.decommissioned.toLocaleString()}</span> decommissioned
          </Link>
          <div className="card">
            <span className="big">{(ratio * 100).toFixed(1)} %</span> online ratio
            <meter min={0} max={1} value={ratio} aria-label="online ratio" />
          </div>
        </section>
      ) : null}
      <section aria-labelledby="inflight-h">
        <h2 id="inflight-h">Rollouts in flight</h2>
        <ErrorNote error={rollouts.error} />
        {rollouts.isPending ? (
          <Loading what="rollouts" />
        ) : inFlight.length === 0 ? (
          <p className="muted">No rollout is running.</p>
        ) : (
          <Table head={['Rollout', 'Status', 'Devices', 'Progress']}>
            {inFlight.map((r) => (
              <tr key={r.id}>
                <td>
                  <Link to={`/rollouts/${r.id}`}>{r.component}</Link> <span className="muted">({r.kind})</span>
                </td>
                <td>
                  <Badge value={r.status} />
                </td>
                <td>{r.device_count}</td>
                <td>
                  <RolloutProgress progress={r.progress} total={r.device_count} />
                </td>
              </tr>
            ))}
          </Table>
        )}
      </section>
    </>
  );
}
