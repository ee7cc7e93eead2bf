import { Badge, Table, When } from '../../../ui/kit';
import { DeadlineClock } from '../common';
import { words, type Case } from './shared';

/** Every Article 14 deadline of the case: status, the clock counted down from the server's `remaining_seconds`, when it was met. */
export function Deadlines({ c, fetchedAt }: { c: Case; fetchedAt: number }) {
  return (
    <section aria-labelledby="deadlines-h">
      <h2 id="deadlines-h">Deadlines</h2>
      {c.deadlines.length === 0 ? (
        <p className="muted">No deadline runs for this case.</p>
      ) : (
        <Table head={['Obligation', 'Article', 'Status', 'Clock', 'Met', 'Basis']} caption="Article 14 deadlines of the case">
          {c.deadlines.map((dl) => (
            <tr key={`${dl.obligation}-${dl.request_id ?? ''}`} className={dl.overdue ? 'overdue-row' : undefined}>
              <td>{words(dl.obligation)}</td>
              <td>{dl.article}</td>
              <td>
                <Badge value={dl.overdue ? 'overdue' : dl.status} />
                {dl.waiting_for && <div className="muted">waiting for {words(dl.waiting_for)}</div>}
              </td>
              <td>
                <DeadlineClock dueAt={dl.due_at} remainingSeconds={dl.remaining_seconds} overdue={dl.overdue} fetchedAt={fetchedAt} met={dl.met_at !== null} />
              </td>
              <td>
                <When at={dl.met_at} />
              </td>
              <td>{dl.basis}</td>
            </tr>
          ))}
        </Table>
      )}
    </section>
  );
}
