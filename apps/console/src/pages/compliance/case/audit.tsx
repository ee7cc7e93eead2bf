import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { caseQueries } from '../../../api/queries/cases';
import { Paged, When, useListParams } from '../../../ui/kit';

/** The audit trail of the case (paged). */
export function CaseAudit({ caseId }: { caseId: string }) {
  const list = useListParams('audit.');
  const query = { limit: list.limit, offset: list.offset };
  const audit = useQuery({ ...caseQueries.audit(caseId, query), placeholderData: keepPreviousData });
  return (
    <section aria-labelledby="case-audit-h">
      <h2 id="case-audit-h">Audit trail of the case</h2>
      <Paged what="events" result={audit} list={list} head={['When', 'Action', 'Actor', 'Credential']}>
        {(page) =>
          page.events.map((ev) => (
            <tr key={ev.id}>
              <td>
                <When at={ev.at} />
              </td>
              <td>{ev.action}</td>
              <td>{ev.actor}</td>
              <td>{ev.credential}</td>
            </tr>
          ))
        }
      </Paged>
    </section>
  );
}
