import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { auditQueries } from '../../api/queries/audit';
import { EventDetail } from '../../ui/event-text';
import { Download, Field, Mono, PageTitle, Paged, SearchBox, When, useListParams } from '../../ui/kit';

const toIso = (local: string) => (local ? new Date(local).toISOString() : '');

export function AuditPage() {
  const list = useListParams();
  const action = list.get('action');
  const since = list.get('since');
  const until = list.get('until');
  const filters = { ...(action ? { action } : {}), ...(since ? { since: toIso(since) } : {}), ...(until ? { until: toIso(until) } : {}) };
  const query = { limit: list.limit, offset: list.offset, ...filters };
  const events = useQuery({
    ...auditQueries.list(query),
    placeholderData: keepPreviousData,
  });
  return (
    <>
      <PageTitle>Audit trail</PageTitle>
      <div className="filters" role="search">
        <SearchBox label="Action" value={action} onSearch={(v: string) => list.set({ action: v })} />
        <Field label="Since">{(id) => <input id={id} type="datetime-local" value={since} onChange={(ev) => list.set({ since: ev.target.value })} />}</Field>
        <Field label="Until">{(id) => <input id={id} type="datetime-local" value={until} onChange={(ev) => list.set({ until: ev.target.value })} />}</Field>
        <Download href={`/api/v1/audit/export?${new URLSearchParams(filters).toString()}`}>Export (JSON Lines)</Download>
      </div>
      <Paged what="events" result={events} list={list} head={['When', 'Actor', 'Action', 'Target', 'Detail']}>
        {(e) =>
          e.events.map((ev) => (
            <tr key={ev.id}>
              <td>
                <When at={ev.at} />
              </td>
              <td>
                {ev.actor} <span className="muted">({ev.credential})</span>
              </td>
              <td>{ev.action}</td>
              <td>
                <Mono>{ev.target}</Mono>
              </td>
              <td>
                <EventDetail action={ev.action} target={ev.target} detail={ev.detail} />
              </td>
            </tr>
          ))
        }
      </Paged>
    </>
  );
}
