import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, ok } from '../../../api/client';
import { caseQueries } from '../../../api/queries/cases';
import { ErrorNote, Field, Guard, Mono } from '../../../ui/kit';
import { words, type Case, type Fields, type StageName, type FieldSpec } from './shared';

/** Produces a stage submission from a form built from `GET /case-submission-fields` for the case's kind. */
export function NewSubmission({ c, fields }: { c: Case; fields: Fields }) {
  const client = useQueryClient();
  const [stage, setStage] = useState<StageName>('early_warning');
  const entry = fields.stages.find((s) => s.stage === stage)!;
  const specs: FieldSpec[] = c.kind === 'severe_incident' ? entry.fields.severe_incident : entry.fields.exploited_vulnerability;
  const produce = useMutation({
    mutationFn: (content: Record<string, unknown>) =>
      ok(api.POST('/api/v1/cases/{id}/submissions', { params: { path: { id: c.id } }, body: { stage, content } })),
    onSuccess: () =>
      Promise.all([
        client.invalidateQueries({ queryKey: caseQueries.keys.submissions(c.id) }),
        client.invalidateQueries({ queryKey: caseQueries.detail(c.id).queryKey }),
        client.invalidateQueries({ queryKey: caseQueries.keys.lists }),
      ]),
  });
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const d = new FormData(e.currentTarget);
    const content: Record<string, unknown> = {};
    for (const spec of specs) {
      if (spec.type === 'member_states') content[spec.name] = d.getAll(spec.name).map(String);
      else if (spec.type === 'boolean') content[spec.name] = d.get(spec.name) === 'true';
      else {
        const v = String(d.get(spec.name) ?? '').trim();
        if (v !== '' || spec.required) content[spec.name] = v;
      }
    }
    produce.mutate(content);
  };
  const input = (spec: FieldSpec, fid: string) => {
    switch (spec.type) {
      case 'tlp':
      case 'severity': {
        const values = spec.type === 'tlp' ? fields.tlp : fields.severities;
        return (
          <select id={fid} name={spec.name} required={spec.required} defaultValue={spec.required ? values[0] : ''}>
            {!spec.required && <option value="">not given</option>}
            {values.map((v) => (
              <option key={v} value={v}>
                {v}
              </option>
            ))}
          </select>
        );
      }
      case 'boolean':
        return (
          <select id={fid} name={spec.name} defaultValue="false">
            <option value="false">no</option>
            <option value="true">yes</option>
          </select>
        );
      case 'member_states':
        return (
          <select id={fid} name={spec.name} multiple size={4}>
            {fields.member_states.map((m) => (
              <option key={m} value={m}>
                {m}
              </option>
            ))}
          </select>
        );
      case 'uuid':
        return (
          <select id={fid} name={spec.name} required={spec.required}>
            {c.intermediate_requests.map((r) => (
              <option key={r.id} value={r.id}>
                {r.requested_by} (due {new Date(r.due_at).toLocaleString()})
              </option>
            ))}
          </select>
        );
      case 'url':
        return <input id={fid} name={spec.name} type="url" required={spec.required} />;
      default:
        return <textarea id={fid} name={spec.name} required={spec.required} rows={2} />;
    }
  };
  return (
    <Guard perm="evidence.write" legend="Produce a submission">
      <form onSubmit={submit} className="filters" key={stage}>
        <Field label="Stage">
          {(fid) => (
            <select id={fid} value={stage} onChange={(e) => setStage(e.target.value as StageName)}>
              {fields.stages.map((s) => (
                <option key={s.stage} value={s.stage}>
                  {s.title}
                </option>
              ))}
            </select>
          )}
        </Field>
        {specs.map((spec) => (
          <Field key={spec.name} label={`${spec.label}${spec.required ? '' : ' (optional)'}`}>
            {(fid) => input(spec, fid)}
          </Field>
        ))}
        <button type="submit" className="primary" disabled={produce.isPending}>
          Produce submission
        </button>
      </form>
      <ErrorNote error={produce.error} />
      {produce.data && (
        <p role="status">
          Produced the {words(produce.data.stage)} submission <Mono>{produce.data.digest}</Mono>.
        </p>
      )}
    </Guard>
  );
}
