import type { FormEvent } from 'react';
import { api, ok } from '../../../api/client';
import { useMe } from '../../../api/session';
import { Badge, ErrorNote, Field, Guard, When } from '../../../ui/kit';
import { useCaseWrite, type Case } from './shared';

/** The assessment of the case, and recording it while the case is open (POST /cases/{id}/assessments). */
export function Assessment({ c }: { c: Case }) {
  const me = useMe().data;
  const assess = useCaseWrite(c.id, (body: { outcome: 'reportable' | 'not_reportable'; rationale: string }) =>
    ok(api.POST('/api/v1/cases/{id}/assessments', { params: { path: { id: c.id } }, body })),
  );
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const d = new FormData(e.currentTarget);
    assess.mutate({ outcome: String(d.get('outcome')) as 'reportable' | 'not_reportable', rationale: String(d.get('rationale') ?? '') });
  };
  return (
    <section aria-labelledby="assessment-h">
      <h2 id="assessment-h">Assessment</h2>
      {c.assessment ? (
        <p>
          <Badge value={c.assessment.outcome} /> by {c.assessment.assessor}, <When at={c.assessment.assessed_at} />: {c.assessment.rationale}
        </p>
      ) : (
        <p className="muted">Not assessed yet; the clocks already run from awareness.</p>
      )}
      {c.state === 'open' && (
        <Guard perm="evidence.write" legend="Record the assessment">
          <form className="filters" onSubmit={submit}>
            <Field label="Outcome">
              {(fid) => (
                <select id={fid} name="outcome" defaultValue="reportable">
                  <option value="reportable">reportable</option>
                  <option value="not_reportable">not reportable (closes the case)</option>
                </select>
              )}
            </Field>
            <Field label="Rationale">{(fid) => <textarea id={fid} name="rationale" required rows={2} className="wide" />}</Field>
            <button type="submit" className="primary" disabled={assess.isPending || me === undefined}>
              Record assessment
            </button>
          </form>
          <ErrorNote error={assess.error} />
        </Guard>
      )}
    </section>
  );
}
