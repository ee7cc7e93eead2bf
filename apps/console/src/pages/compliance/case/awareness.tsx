import type { FormEvent } from 'react';
import { api, ok } from '../../../api/client';
import { useMe } from '../../../api/session';
import { ErrorNote, Field, Guard, Table, When } from '../../../ui/kit';
import { isoOfLocal, localNow } from '../cases';
import { useCaseWrite, type Case } from './shared';

/** The awareness records, oldest first, and a correction of the awareness moment (the clocks move with it). */
export function Awareness({ c }: { c: Case }) {
  const me = useMe().data;
  const correct = useCaseWrite(c.id, (body: { aware_at: string; aware_by: string; evidence: string; reason: string }) =>
    ok(api.POST('/api/v1/cases/{id}/awareness', { params: { path: { id: c.id } }, body })),
  );
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const d = new FormData(e.currentTarget);
    const text = (k: string) => String(d.get(k) ?? '').trim();
    correct.mutate({ aware_at: isoOfLocal(text('aware_at')), aware_by: text('aware_by'), evidence: text('evidence'), reason: text('reason') });
  };
  return (
    <section aria-labelledby="awareness-h">
      <h2 id="awareness-h">Awareness</h2>
      <Table head={['Aware since', 'Aware by', 'Evidence', 'Correction reason', 'Recorded']} caption="Awareness records, oldest first">
        {c.awareness_history.map((a) => (
          <tr key={a.id}>
            <td>
              <When at={a.aware_at} />
            </td>
            <td>{a.aware_by}</td>
            <td>{a.evidence}</td>
            <td>{a.reason ?? '—'}</td>
            <td>
              {a.recorded_by}, <When at={a.recorded_at} />
            </td>
          </tr>
        ))}
      </Table>
      <Guard perm="evidence.write" legend="Correct the awareness moment">
        <form className="filters" onSubmit={submit}>
          <Field label="Corrected awareness time" hint="your local time; the clocks move with it">
            {(fid) => <input id={fid} name="aware_at" type="datetime-local" required defaultValue={localNow()} />}
          </Field>
          <Field label="Corrected aware by">{(fid) => <input id={fid} name="aware_by" required defaultValue={me?.email ?? ''} />}</Field>
          <Field label="Corrected evidence">{(fid) => <input id={fid} name="evidence" required />}</Field>
          <Field label="Reason for the correction">{(fid) => <input id={fid} name="reason" required />}</Field>
          <button type="submit" disabled={correct.isPending}>
            Record correction
          </button>
        </form>
        <ErrorNote error={correct.error} />
      </Guard>
    </section>
  );
}
