import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { caseQueries } from '../api/queries/cases';
import { deviceQueries } from '../api/queries/devices';
import { findingQueries } from '../api/queries/findings';
import { rolloutQueries } from '../api/queries/rollouts';
import { useCan } from '../api/session';
import { Badge, ErrorNote, Loading, PageTitle, Table, When } from '../ui/kit';
import { RolloutProgress } from './rollouts';

const SEVERITY_ORDER = ['critical', 'high', 'medium', 'low', 'none', 'unknown'] as const;
const hours = (seconds: number): string =>
  Math.abs(seconds) >= 172_800 ? `${Math.floor(seconds / 86_400)} d` : `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`;

/** Fleet at a glance: counts by status, online ratio, open findings by severity, nearest Article 14 deadlines, rollouts in flight (polled). */
export function DashboardPage() {
  // limit=1: the totals and counts come with any page; no device list is loaded
  const devices = useQuery({
    ...deviceQueries.list({ limit: 1 }),
    refetchInterval: 10_000,
  });
  const rollouts = useQuery({
    ...rolloutQueries.list({ limit: 50 }),
    refetchInterval: 5_000,
  });
  const evidence = useCan('evidence.read');
  // limit=1 again: the counts by severity come with any page of open findings
  const findings = useQuery({
    ...findingQueries.list({ limit: 1, open: true }),
    enabled: evidence.ok,
    refetchInterval: 60_000,
  });
  const cases = useQuery({
    ...caseQueries.nearestDeadlines(),
    enabled: evidence.ok,
    refetchInterval: 60_000,
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
      <section aria-labelledby="findings-h">
        <h2 id="findings-h">Open findings by severity</h2>
        {!evidence.ok ? (
          <p className="reason">{evidence.reason}</p>
        ) : (
          <>
            <ErrorNote error={findings.error} />
            {findings.isPending ? (
              <Loading what="findings" />
            ) : findings.data ? (
              <div className="cards">
                {SEVERITY_ORDER.map((sev) => (
                  <Link key={sev} className="card" to={`/findings?severity=${sev}&open=true`}>
                    <span className="big">{findings.data.counts[sev].toLocaleString()}</span> {sev}
                  </Link>
                ))}
              </div>
            ) : null}
          </>
        )}
      </section>
      <section aria-labelledby="deadlines-h">
        <h2 id="deadlines-h">Nearest Article 14 deadlines</h2>
        {evidence.ok && (
          <>
            <ErrorNote error={cases.error} />
            {cases.isPending ? (
              <Loading what="cases" />
            ) : cases.data && cases.data.cases.length === 0 ? (
              <p className="muted">No open case has a deadline running.</p>
            ) : cases.data ? (
              <Table head={['Case', 'State', 'Obligation', 'Due', 'Time remaining']} caption="Open and reportable cases, nearest deadline first">
                {cases.data.cases.map((c) => {
                  const next = c.next_deadline!;
                  const left = next.remaining_seconds;
                  return (
                    <tr key={c.id}>
                      <td>
                        <Link to={`/cases/${c.id}`}>{c.title}</Link>
                      </td>
                      <td>
                        <Badge value={c.state} />
                      </td>
                      <td>{next.obligation?.replace(/_/g, ' ') ?? '—'}</td>
                      <td>
                        <When at={next.due_at} />
                      </td>
                      <td className={next.overdue ? 'overdue' : undefined}>{next.overdue ? `overdue by ${hours(-left)}` : `${hours(left)} left`}</td>
                    </tr>
                  );
                })}
              </Table>
            ) : null}
          </>
        )}
      </section>
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
