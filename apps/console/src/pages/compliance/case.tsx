import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Link, useParams } from 'react-router';
import { ApiError, api, describe, ok, writeHeaders, type Schema, type paths } from '../../api/client';
import { useCan, useMe } from '../../api/session';
import {
  Badge,
  Download,
  ErrorNote,
  Field,
  Guard,
  Loading,
  Mono,
  PageTitle,
  Paged,
  Table,
  When,
  erroredField,
  fieldErrorId,
  useListParams,
} from '../../ui/kit';
import { isoOfLocal, kindWords, localNow } from './cases';
import { DeadlineClock } from './common';
import { ReportingPlatformPacket } from './srp-packet';

type Case = Schema<'/api/v1/cases/{id}', 'get'>;
type Fields = Schema<'/api/v1/case-submission-fields', 'get'>;
type StageName = Fields['stages'][number]['stage'];
type FieldSpec = Fields['stages'][number]['fields']['exploited_vulnerability'][number];
type FilingBody = paths['/api/v1/cases/{id}/submissions/{sid}/filings']['post']['requestBody']['content']['application/json'];
type Recipient = FilingBody['recipients'][number];
type MemberState = NonNullable<FilingBody['member_state']>;
type Transport = NonNullable<FilingBody['transport']>;
type CaseUpdate = paths['/api/v1/cases/{id}']['patch']['requestBody']['content']['application/json'];

const words = (v: string) => v.replace(/_/g, ' ');

/** One Article 14 case: its clocks, awareness, assessment, submissions, attachments and export. */
export function CasePage() {
  const id = useParams().id!;
  const path = { path: { id } };
  const c = useQuery({ queryKey: ['case', id], queryFn: () => ok(api.GET('/api/v1/cases/{id}', { params: path })), refetchInterval: 60_000 });
  const d = c.data;
  return (
    <>
      <PageTitle>{d ? `Case: ${d.title}` : 'Case'}</PageTitle>
      <ErrorNote error={c.error} />
      {c.isPending ? (
        <Loading what="the case" />
      ) : d ? (
        <>
          <dl className="facts">
            <dt>Kind</dt>
            <dd>{kindWords(d.kind)}</dd>
            <dt>State</dt>
            <dd>
              <Badge value={d.state} />
            </dd>
            <dt>Owner</dt>
            <dd>{d.owner}</dd>
            <dt>Products</dt>
            <dd>{d.products.join(', ') || '—'}</dd>
            <dt>Vulnerabilities</dt>
            <dd>
              {d.vulnerability_ids.length === 0
                ? '—'
                : d.vulnerability_ids.map((v) => (
                    <span key={v}>
                      <Link to={`/vulnerabilities/${encodeURIComponent(v)}`}>{v}</Link>{' '}
                    </span>
                  ))}
            </dd>
            <dt>Aware since</dt>
            <dd>
              <When at={d.aware_at} />
              {d.awareness && d.awareness.corrections > 0 && <span className="muted"> ({d.awareness.corrections} corrections)</span>}
            </dd>
            <dt>Corrective measure available</dt>
            <dd>
              <When at={d.corrective_measure_at} />
            </dd>
            <dt>Summary</dt>
            <dd>{d.summary || '—'}</dd>
          </dl>
          <p>
            <Download href={`/api/v1/cases/${id}/export`}>Evidence archive (tar, signed manifest)</Download>
          </p>
          <EditCase c={d} />
          <Deadlines c={d} fetchedAt={c.dataUpdatedAt} />
          <Assessment c={d} />
          <Awareness c={d} />
          <MeasuresAndRequests c={d} />
          <Submissions c={d} />
          <ReportingPlatformPacket caseId={id} editable={d.state === 'open' || d.state === 'reportable'} />
          <Attachments caseId={id} />
          <CloseOrReopen c={d} />
          <CaseAudit caseId={id} />
        </>
      ) : null}
    </>
  );
}

const EDITABLE_LISTS = [
  ['products', 'Case products', 'product ids'],
  ['artifact_ids', 'Linked artifact ids', 'artifact UUIDs'],
  ['vulnerability_ids', 'Linked vulnerability ids', 'CVE, GHSA or OSV ids; the linked findings follow them'],
  ['device_names', 'Linked device names', 'device names'],
  ['group_ids', 'Linked group ids', 'group UUIDs'],
] as const;

/** Title, summary, owner and links of an open or reportable case (PATCH /cases/{id}); the API's field errors shown under the field. */
function EditCase({ c }: { c: Case }) {
  const edit = useCaseWrite(c.id, (body: CaseUpdate) => ok(api.PATCH('/api/v1/cases/{id}', { params: { path: { id: c.id } }, body })));
  const editable = c.state === 'open' || c.state === 'reportable';
  const field = erroredField(edit.error);
  const errorOf = (name: string) => (name === field && edit.error instanceof Error ? edit.error.message : undefined);
  const described = (name: string, fid: string) => (name === field ? { 'aria-invalid': true, 'aria-describedby': fieldErrorId(fid) } : {});
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const d = new FormData(e.currentTarget);
    const text = (k: string) => String(d.get(k) ?? '').trim();
    const list = (k: string) =>
      text(k)
        .split(/[\s,]+/)
        .filter((v) => v !== '');
    edit.mutate({
      title: text('title'),
      summary: text('summary'),
      owner: text('owner'),
      products: list('products'),
      artifact_ids: list('artifact_ids'),
      vulnerability_ids: list('vulnerability_ids'),
      device_names: list('device_names'),
      group_ids: list('group_ids'),
    });
  };
  return (
    <section aria-labelledby="edit-h">
      <h2 id="edit-h">Edit the case</h2>
      {!editable && <p className="muted">A {words(c.state)} case cannot be changed; reopen it first.</p>}
      <Guard perm="evidence.write" legend="Title, owner, products and links">
        <form className="filters" onSubmit={submit} key={c.updated_at}>
          <Field label="Case title" error={errorOf('title')}>
            {(fid) => <input id={fid} name="title" required defaultValue={c.title} disabled={!editable} className="wide" {...described('title', fid)} />}
          </Field>
          <Field label="Case owner" error={errorOf('owner')}>
            {(fid) => <input id={fid} name="owner" required defaultValue={c.owner} disabled={!editable} {...described('owner', fid)} />}
          </Field>
          <Field label="Case summary" error={errorOf('summary')}>
            {(fid) => (
              <textarea id={fid} name="summary" rows={2} defaultValue={c.summary} disabled={!editable} className="wide" {...described('summary', fid)} />
            )}
          </Field>
          {EDITABLE_LISTS.map(([name, label, hint]) => (
            <Field key={name} label={label} hint={`${hint}, separated by spaces or commas`} error={errorOf(name)}>
              {(fid) => <input id={fid} name={name} defaultValue={c[name].join(' ')} disabled={!editable} className="wide" {...described(name, fid)} />}
            </Field>
          ))}
          <button type="submit" disabled={!editable || edit.isPending}>
            Save changes
          </button>
        </form>
        {edit.error !== null && field === undefined && <ErrorNote error={edit.error} />}
        {edit.isSuccess && !edit.isPending && <p role="status">Saved.</p>}
      </Guard>
    </section>
  );
}

function Deadlines({ c, fetchedAt }: { c: Case; fetchedAt: number }) {
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

function useCaseWrite<A>(id: string, write: (arg: A) => Promise<unknown>) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: write,
    onSuccess: () =>
      Promise.all([
        client.invalidateQueries({ queryKey: ['case', id] }),
        client.invalidateQueries({ queryKey: ['cases'] }),
        client.invalidateQueries({ queryKey: ['case-audit', id] }),
      ]),
  });
}

function Assessment({ c }: { c: Case }) {
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

function Awareness({ c }: { c: Case }) {
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

function fileSubmission(caseId: string, sid: string, body: FilingBody) {
  return ok(api.POST('/api/v1/cases/{id}/submissions/{sid}/filings', { params: { path: { id: caseId, sid } }, body }));
}

function Submissions({ c }: { c: Case }) {
  const list = useListParams('submissions.');
  const query = { limit: list.limit, offset: list.offset };
  const submissions = useQuery({
    queryKey: ['case-submissions', c.id, query],
    queryFn: () => ok(api.GET('/api/v1/cases/{id}/submissions', { params: { path: { id: c.id }, query } })),
    placeholderData: keepPreviousData,
  });
  const fields = useQuery({ queryKey: ['case-submission-fields'], queryFn: () => ok(api.GET('/api/v1/case-submission-fields')), staleTime: Infinity });
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

function NewSubmission({ c, fields }: { c: Case; fields: Fields }) {
  const client = useQueryClient();
  const [stage, setStage] = useState<StageName>('early_warning');
  const entry = fields.stages.find((s) => s.stage === stage)!;
  const specs: FieldSpec[] = c.kind === 'severe_incident' ? entry.fields.severe_incident : entry.fields.exploited_vulnerability;
  const produce = useMutation({
    mutationFn: (content: Record<string, unknown>) =>
      ok(api.POST('/api/v1/cases/{id}/submissions', { params: { path: { id: c.id } }, body: { stage, content } })),
    onSuccess: () =>
      Promise.all([
        client.invalidateQueries({ queryKey: ['case-submissions', c.id] }),
        client.invalidateQueries({ queryKey: ['case', c.id] }),
        client.invalidateQueries({ queryKey: ['cases'] }),
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

function Filing({
  caseId,
  submission,
  memberStates,
}: {
  caseId: string;
  submission: Schema<'/api/v1/cases/{id}/submissions', 'get'>['submissions'][number];
  memberStates: MemberState[];
}) {
  const can = useCan('evidence.write');
  const client = useQueryClient();
  const [recipients, setRecipients] = useState<Recipient[]>(submission.stage === 'advisory' ? ['users'] : ['csirt']);
  const [state, setState] = useState<MemberState | ''>('');
  const [reference, setReference] = useState('');
  const [transport, setTransport] = useState<Transport>('manual');
  const file = useMutation({
    mutationFn: () =>
      fileSubmission(caseId, submission.id, {
        recipients,
        transport,
        ...(state ? { member_state: state } : {}),
        ...(transport === 'manual' && reference.trim() ? { external_reference: reference.trim() } : {}),
      }),
    onSuccess: () =>
      Promise.all([client.invalidateQueries({ queryKey: ['case', caseId] }), client.invalidateQueries({ queryKey: ['case-submissions', caseId] })]),
  });
  if (submission.superseded_by) return <span className="muted">superseded</span>;
  const label = `the ${words(submission.stage)} submission`;
  const toggle = (r: Recipient, on: boolean) => setRecipients((rs) => (on ? [...rs, r] : rs.filter((x) => x !== r)));
  return (
    <fieldset className="plain" disabled={!can.ok}>
      <legend className="sr-only">Record the filing of {label}</legend>
      <span className="row">
        {(['csirt', 'enisa', 'users'] as const).map((r) => (
          <label key={r}>
            <input type="checkbox" checked={recipients.includes(r)} onChange={(e) => toggle(r, e.target.checked)} /> {r.toUpperCase()}
          </label>
        ))}
        <select aria-label={`Coordinator CSIRT Member State for ${label}`} value={state} onChange={(e) => setState(e.target.value as MemberState | '')}>
          <option value="">Member State</option>
          {memberStates.map((m) => (
            <option key={m} value={m}>
              {m}
            </option>
          ))}
        </select>
        <select aria-label={`Transport for ${label}`} value={transport} onChange={(e) => setTransport(e.target.value as Transport)}>
          <option value="manual">filed by me</option>
          <option value="file">file (server outbox)</option>
          <option value="webhook">webhook (configured URL)</option>
        </select>
        {transport === 'manual' && (
          <input
            aria-label={`External reference for ${label}`}
            placeholder="reference"
            value={reference}
            onChange={(e) => setReference(e.target.value)}
            size={10}
          />
        )}
        <button
          type="button"
          disabled={!can.ok || file.isPending || recipients.length === 0}
          title={can.ok ? undefined : can.reason}
          onClick={() => file.mutate()}
        >
          {transport === 'manual' ? 'Record filing' : 'Deliver and record filing'}
          <span className="sr-only"> of {label}</span>
        </button>
      </span>
      {!can.ok && <span className="reason">{can.reason}</span>}
      {file.data && <FilingResult filing={file.data} />}
      <ErrorNote error={file.error} />
    </fieldset>
  );
}

type FilingRecord = Schema<'/api/v1/cases/{id}/submissions/{sid}/filings', 'post', 201>;

/** What a recorded filing says: where the document went and the reference the recipient returned. */
function FilingResult({ filing }: { filing: FilingRecord }) {
  const files = Array.isArray(filing.delivery.files) ? filing.delivery.files.map(String) : [];
  const status = typeof filing.delivery.status === 'number' ? filing.delivery.status : undefined;
  return (
    <div role="status">
      Filed to {filing.recipients.map((r) => r.toUpperCase()).join(' and ')}
      {filing.transport === 'manual' && ' (recorded as filed by you)'}
      {filing.transport === 'webhook' && ` by the webhook (it answered ${status ?? 'with success'})`}
      {filing.transport === 'file' && ' by the file transport'}
      {filing.external_reference !== null && <>, reference {filing.external_reference}</>}.
      {files.length > 0 && (
        <ul className="plain">
          {files.map((f) => (
            <li key={f}>
              written to <Mono>{f}</Mono>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

function Attachments({ caseId }: { caseId: string }) {
  const list = useListParams('attachments.');
  const client = useQueryClient();
  const query = { limit: list.limit, offset: list.offset };
  const attachments = useQuery({
    queryKey: ['case-attachments', caseId, query],
    queryFn: () => ok(api.GET('/api/v1/cases/{id}/attachments', { params: { path: { id: caseId }, query } })),
    placeholderData: keepPreviousData,
  });
  const refresh = () => client.invalidateQueries({ queryKey: ['case-attachments', caseId] });
  const upload = useMutation({
    mutationFn: async (form: FormData) => {
      const res = await fetch(`/api/v1/cases/${caseId}/attachments`, { method: 'POST', headers: writeHeaders(), body: form });
      const body: unknown = await res.json().catch(() => undefined);
      if (!res.ok) throw new ApiError(res.status, describe(res.status, body));
    },
    onSuccess: refresh,
  });
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const d = new FormData(e.currentTarget);
    // the description first, then the file (the server reads the parts in order)
    const form = new FormData();
    const description = String(d.get('description') ?? '').trim();
    if (description) form.set('description', description);
    form.set('file', d.get('file') as File);
    upload.mutate(form, { onSuccess: () => (e.target as HTMLFormElement).reset() });
  };
  return (
    <section aria-labelledby="attachments-h">
      <h2 id="attachments-h">Attachments</h2>
      <Guard perm="evidence.write" legend="Attach a file">
        <form className="filters" onSubmit={submit}>
          <Field label="Attachment file">{(fid) => <input id={fid} name="file" type="file" required />}</Field>
          <Field label="Attachment description">{(fid) => <input id={fid} name="description" />}</Field>
          <button type="submit" disabled={upload.isPending}>
            Attach
          </button>
        </form>
        <ErrorNote error={upload.error} />
      </Guard>
      <Paged what="attachments" result={attachments} list={list} head={['File', 'Type', 'Bytes', 'SHA-256', 'Added', 'State']}>
        {(page) =>
          page.attachments.map((a) => (
            <tr key={a.id}>
              <td>
                {a.redaction ? (
                  a.filename
                ) : (
                  <a href={`/api/v1/cases/${caseId}/attachments/${a.id}/content`} download={a.filename}>
                    {a.filename}
                  </a>
                )}
                {a.description && <div className="muted">{a.description}</div>}
              </td>
              <td>{a.content_type}</td>
              <td>{a.length.toLocaleString()}</td>
              <td>
                <Mono>{a.digest.slice(0, 19)}…</Mono>
              </td>
              <td>
                {a.added_by}, <When at={a.added_at} />
              </td>
              <td>
                {a.redaction ? (
                  <span>
                    <Badge value="redacted" /> {a.redaction.reason} ({a.redaction.redacted_by})
                  </span>
                ) : (
                  <Redact caseId={caseId} attachment={a.id} filename={a.filename} onDone={() => void refresh()} />
                )}
              </td>
            </tr>
          ))
        }
      </Paged>
    </section>
  );
}

function Redact({ caseId, attachment, filename, onDone }: { caseId: string; attachment: string; filename: string; onDone: () => void }) {
  const can = useCan('evidence.write');
  const [reason, setReason] = useState('');
  const redact = useMutation({
    mutationFn: () => ok(api.POST('/api/v1/cases/{id}/attachments/{aid}/redaction', { params: { path: { id: caseId, aid: attachment } }, body: { reason } })),
    onSuccess: onDone,
  });
  return (
    <span className="row">
      <input aria-label={`Redaction reason for ${filename}`} value={reason} disabled={!can.ok} onChange={(e) => setReason(e.target.value)} size={12} />
      <button
        type="button"
        className="danger"
        disabled={!can.ok || reason.trim() === '' || redact.isPending}
        title={can.ok ? undefined : can.reason}
        onClick={() => redact.mutate()}
      >
        Redact<span className="sr-only"> {filename}</span>
      </button>
      {!can.ok && <span className="sr-only">{can.reason}</span>}
      <ErrorNote error={redact.error} />
    </span>
  );
}

function MeasuresAndRequests({ c }: { c: Case }) {
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

function CloseOrReopen({ c }: { c: Case }) {
  const [reason, setReason] = useState('');
  const reopen = c.state === 'closed' || c.state === 'not_reportable';
  const act = useCaseWrite(c.id, () =>
    reopen
      ? ok(api.POST('/api/v1/cases/{id}/reopen', { params: { path: { id: c.id } }, body: { reason } }))
      : ok(api.POST('/api/v1/cases/{id}/close', { params: { path: { id: c.id } }, body: { reason } })),
  );
  if (c.state === 'open') return null;
  return (
    <section aria-labelledby="close-h">
      <h2 id="close-h">{reopen ? 'Reopen the case' : 'Close the case'}</h2>
      {!reopen && <p className="muted">A reportable case closes once its final report is filed.</p>}
      <Guard perm="evidence.write">
        <form
          className="filters"
          onSubmit={(e) => {
            e.preventDefault();
            act.mutate(undefined);
          }}
        >
          <Field label={reopen ? 'Reason for reopening' : 'Reason for closing'}>
            {(fid) => <input id={fid} required value={reason} onChange={(e) => setReason(e.target.value)} className="wide" />}
          </Field>
          <button type="submit" className={reopen ? undefined : 'danger'} disabled={act.isPending}>
            {reopen ? 'Reopen case' : 'Close case'}
          </button>
        </form>
        <ErrorNote error={act.error} />
      </Guard>
    </section>
  );
}

function CaseAudit({ caseId }: { caseId: string }) {
  const list = useListParams('audit.');
  const query = { limit: list.limit, offset: list.offset };
  const audit = useQuery({
    queryKey: ['case-audit', caseId, query],
    queryFn: () => ok(api.GET('/api/v1/cases/{id}/audit', { params: { path: { id: caseId }, query } })),
    placeholderData: keepPreviousData,
  });
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
