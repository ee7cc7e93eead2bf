import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { caseQueries } from '../../../api/queries/cases';
import { Download, ErrorNote, Mono, Paged, When, useListParams } from '../../../ui/kit';
import { Filing } from './filing';
import { NewSubmission } from './new-submission';
import { words, type Case, type MemberState } from './shared';

/** The stage submissions of the case (paged), their downloads and filings, and the form that produces one. */
export function Submissions({ c }: { c: Case }) {
  const list = useListParams('submissions.');
  const query = { limit: list.limit, offset: list.offset };
  const submissions = useQuery({ ...caseQueries.submissions(c.id, query), placeholderData: keepPreviousData });
  const fields = useQuery(caseQueries.submissionFields());
  const base = `/api/v1/cases/${c.id}/submissions`;
  return (
    <section aria-labelledby="submissions-h">
      <h2 id="submissions-h">Submissions</h2>
      <ErrorNote error={fields.error} />
      {fields.data && <NewSubmission c={c} fields={fields.data} />}
      <Paged what="submissions" result={submissions} list={list} head={['Stage', 'Produced', 'Digest', 'Supersedes', 'Downloads', 'Filing']}>
        {(page) =>
          page.submissions.map((s) => (
            <tr key={s.id}>
              <td>
                {words(s.stage)}
                {s.superseded_by && <div className="muted">superseded</div>}
              </td>
              <td>
                {s.created_by}, <When at={s.created_at} />
              </td>
              <td>
                <Mono>{s.digest.slice(0, 19)}…</Mono>
              </td>
              <td>{s.supersedes_id ? <Mono>{s.supersedes_id.slice(0, 8)}</Mono> : '—'}</td>
              <td>
                <span className="row">
                  <Download href={`${base}/${s.id}/document`}>
                    JSON<span className="sr-only"> of the {words(s.stage)} submission</span>
                  </Download>
                  <Download href={`${base}/${s.id}/pdf`}>
                    PDF<span className="sr-only"> of the {words(s.stage)} submission</span>
                  </Download>
                  {s.stage === 'advisory' && (
                    <Download href={`${base}/${s.id}/csaf`}>
                      CSAF<span className="sr-only"> of the {words(s.stage)} submission</span>
                    </Download>
                  )}
                </span>
              </td>
              <td>
                <Filing caseId={c.id} submission={s} memberStates={(fields.data?.member_states ?? []) as MemberState[]} />
              </td>
            </tr>
          ))
        }
      </Paged>
    </section>
  );
}
