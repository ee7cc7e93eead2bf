import type { FormEvent } from 'react';
import { api, ok } from '../../../api/client';
import { ErrorNote, Field, Guard, Mono, Table, When } from '../../../ui/kit';
import { isoOfLocal, localNow } from '../cases';
import { useCaseWrite, type Case } from './shared';

/** Corrective measures and CSIRT requests for an intermediate report, each listed and recorded. */
export function MeasuresAndRequests({ c }: { c: Case }) {
  const measure = useCaseWrite(c.id, (body: { description: string; available_at: string; release_id?: string }) =>
    ok(api.POST('/api/v1/cases/{id}/corrective-measure', { params: { path: { id: c.id } }, body })),
  );
  const request = useCaseWrite(c.id, (body: { requested_by: string; due_at: string; reference?: string }) =>
    ok(api.POST('/api/v1/cases/{id}/intermediate-requests', { params: { path: { id: c.id } }, body })),
  );
  const onMeasure = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const d = new FormData(e.currentTarget);
    const release = String(d.get('release_id') ?? '').trim();
    measure.mutate({
      description: String(d.get('description') ?? '').trim(),
      available_at: isoOfLocal(String(d.get('available_at'))),
      ...(release ? { release_id: release } : {}),
    });
  };
  const onRequest = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const d = new FormData(e.currentTarget);
    const reference = String(d.get('reference') ?? '').trim();
    request.mutate({
      requested_by: String(d.get('requested_by') ?? '').trim(),
      due_at: isoOfLocal(String(d.get('due_at'))),
      ...(reference ? { reference } : {}),
    });
  };
  return (
    <section aria-labelledby="measures-h">
      <h2 id="measures-h">Corrective measures and intermediate requests</h2>
      {c.corrective_measures.length > 0 && (
        <Table head={['Available', 'Description', 'Release', 'Recorded']} caption="Corrective or mitigating measures">
          {c.corrective_measures.map((m) => (
            <tr key={m.id}>
              <td>
                <When at={m.available_at} />
              </td>
              <td>{m.description}</td>
              <td>{m.release_id ? <Mono>{m.release_id.slice(0, 8)}</Mono> : '—'}</td>
              <td>
                {m.recorded_by}, <When at={m.recorded_at} />
              </td>
            </tr>
          ))}
        </Table>
      )}
      {c.intermediate_requests.length > 0 && (
        <Table head={['Requested by', 'Requested', 'Due', 'Reference']} caption="CSIRT requests for an intermediate report">
          {c.intermediate_requests.map((r) => (
            <tr key={r.id}>
              <td>{r.requested_by}</td>
              <td>
                <When at={r.requested_at} />
              </td>
              <td>
                <When at={r.due_at} />
              </td>
              <td>{r.reference ?? '—'}</td>
            </tr>
          ))}
        </Table>
      )}
      <Guard perm="evidence.write" legend="Record a corrective measure">
        <form className="filters" onSubmit={onMeasure}>
          <Field label="Measure description">{(fid) => <input id={fid} name="description" required className="wide" />}</Field>
          <Field label="Available since" hint="your local time; the final report is due 14 days later">
            {(fid) => <input id={fid} name="available_at" type="datetime-local" required defaultValue={localNow()} />}
          </Field>
          <Field label="Release id (optional)">{(fid) => <input id={fid} name="release_id" />}</Field>
          <button type="submit" disabled={measure.isPending}>
            Record measure
          </button>
        </form>
        <ErrorNote error={measure.error} />
      </Guard>
      <Guard perm="evidence.write" legend="Record a CSIRT request for an intermediate report">
        <form className="filters" onSubmit={onRequest}>
          <Field label="Requested by">{(fid) => <input id={fid} name="requested_by" required />}</Field>
          <Field label="Report due" hint="your local time">
            {(fid) => <input id={fid} name="due_at" type="datetime-local" required />}
          </Field>
          <Field label="Request reference (optional)">{(fid) => <input id={fid} name="reference" />}</Field>
          <button type="submit" disabled={request.isPending}>
            Record request
          </button>
        </form>
        <ErrorNote error={request.error} />
      </Guard>
    </section>
  );
}
