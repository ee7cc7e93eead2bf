import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Link, useNavigate } from 'react-router';
import { api, ok, type paths } from '../../api/client';
import { caseQueries } from '../../api/queries/cases';
import { useMe } from '../../api/session';
import { Badge, ErrorNote, Field, Guard, PageTitle, Paged, SearchBox, Select, useListParams, useWrite } from '../../ui/kit';
import { DeadlineClock } from './common';

type CaseQuery = NonNullable<paths['/api/v1/cases']['get']['parameters']['query']>;
type CaseState = NonNullable<CaseQuery['state']>;
type CaseKind = NonNullable<CaseQuery['kind']>;
// Records over the generated unions: the compiler fails when the API gains a state or kind.
const STATE_SET: Record<CaseState, true> = { open: true, reportable: true, not_reportable: true, closed: true };
const KIND_SET: Record<CaseKind, string> = { exploited_vulnerability: 'actively exploited vulnerability', severe_incident: 'severe incident' };
export const CASE_STATES = Object.keys(STATE_SET) as CaseState[];
export const CASE_KINDS = Object.keys(KIND_SET) as CaseKind[];
export const kindWords = (k: string): string => KIND_SET[k as CaseKind] ?? k;
const isState = (v: string): v is CaseState => v in STATE_SET;
const isKind = (v: string): v is CaseKind => v in KIND_SET;

/** `datetime-local` text (the browser's zone) as an ISO instant. */
export const isoOfLocal = (v: string): string => new Date(v).toISOString();
/** Now as `datetime-local` text, to the minute. */
export function localNow(): string {
  const d = new Date();
  d.setSeconds(0, 0);
  return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
}

/** Article 14 cases, nearest deadline first, filtered and paged by the server; opening a case. */
export function CasesPage() {
  const list = useListParams();
  const state = list.get('state');
  const kind = list.get('kind');
  const overdue = list.get('overdue');
  const within = list.get('due_within_hours');
  const product = list.get('product');
  const query = {
    limit: list.limit,
    offset: list.offset,
    ...(isState(state) ? { state } : {}),
    ...(isKind(kind) ? { kind } : {}),
    ...(overdue ? { overdue: overdue === 'true' } : {}),
    ...(within && Number(within) > 0 ? { due_within_hours: Number(within) } : {}),
    ...(product ? { product } : {}),
  };
  const cases = useQuery({
    ...caseQueries.list(query),
    placeholderData: keepPreviousData,
    refetchInterval: 60_000,
  });
  const counts = cases.data?.counts;
  return (
    <>
      <PageTitle>Article 14 cases</PageTitle>
      <OpenCaseForm />
      <div className="filters" role="search">
        <Select
          label="State"
          value={state}
          options={[['', 'any state'], ...CASE_STATES.map((s) => [s, counts ? `${s.replace(/_/g, ' ')} (${counts[s]})` : s.replace(/_/g, ' ')] as const)]}
          onChange={(v) => list.set({ state: v })}
        />
        <Select
          label="Kind"
          value={kind}
          options={[['', 'any kind'], ...CASE_KINDS.map((k) => [k, kindWords(k)] as const)]}
          onChange={(v) => list.set({ kind: v })}
        />
        <Select
          label="Overdue"
          value={overdue}
          options={[
            ['', 'either'],
            ['true', 'overdue'],
            ['false', 'not overdue'],
          ]}
          onChange={(v) => list.set({ overdue: v })}
        />
        <Select
          label="Due within"
          value={within}
          options={[
            ['', 'any time'],
            ['24', '24 hours'],
            ['72', '72 hours'],
            ['336', '14 days'],
          ]}
          onChange={(v) => list.set({ due_within_hours: v })}
        />
        <SearchBox label="Product" value={product} onSearch={(v) => list.set({ product: v })} />
      </div>
      <Paged
        what="cases"
        result={cases}
        list={list}
        caption="Article 14 cases, nearest deadline first"
        head={['Case', 'Kind', 'State', 'Next deadline', 'Time remaining', 'Owner', 'Products']}
      >
        {(page) =>
          page.cases.map((c) => (
            <tr key={c.id}>
              <td>
                <Link to={`/cases/${c.id}`}>{c.title}</Link>
              </td>
              <td>{kindWords(c.kind)}</td>
              <td>
                <Badge value={c.state} />
              </td>
              <td>{c.next_deadline?.obligation?.replace(/_/g, ' ') ?? '—'}</td>
              <td>
                {c.next_deadline ? (
                  <DeadlineClock
                    dueAt={c.next_deadline.due_at}
                    remainingSeconds={c.next_deadline.remaining_seconds}
                    overdue={c.next_deadline.overdue}
                    fetchedAt={cases.dataUpdatedAt}
                  />
                ) : (
                  <span className="muted">no open deadline</span>
                )}
              </td>
              <td>{c.owner}</td>
              <td>{c.products.join(', ') || '—'}</td>
            </tr>
          ))
        }
      </Paged>
    </>
  );
}

function OpenCaseForm() {
  const navigate = useNavigate();
  const me = useMe().data;
  const [kind, setKind] = useState<CaseKind>('exploited_vulnerability');
  const open = useWrite(
    (body: paths['/api/v1/cases']['post']['requestBody']['content']['application/json']) => ok(api.POST('/api/v1/cases', { body })),
    caseQueries.keys.lists,
  );
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const d = new FormData(e.currentTarget);
    const text = (k: string) => String(d.get(k) ?? '').trim();
    const listOf = (k: string) =>
      text(k)
        .split(/[\s,]+/)
        .filter(Boolean);
    const summary = text('summary');
    open.mutate(
      {
        kind,
        title: text('title'),
        owner: text('owner'),
        ...(summary ? { summary } : {}),
        products: listOf('products'),
        vulnerability_ids: listOf('vulnerability_ids'),
        awareness: { aware_at: isoOfLocal(text('aware_at')), aware_by: text('aware_by'), evidence: text('evidence') },
      },
      { onSuccess: (c) => void navigate(`/cases/${(c as { id: string }).id}`) },
    );
  };
  return (
    <Guard perm="evidence.write" legend="Open a case">
      <form onSubmit={submit} className="filters">
        <Field label="Case kind">
          {(id) => (
            <select id={id} value={kind} onChange={(e) => setKind(e.target.value as CaseKind)}>
              {CASE_KINDS.map((k) => (
                <option key={k} value={k}>
                  {kindWords(k)}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Title">{(id) => <input id={id} name="title" required maxLength={200} />}</Field>
        <Field label="Owner">{(id) => <input id={id} name="owner" required defaultValue={me?.email ?? ''} maxLength={200} />}</Field>
        <Field label="Products" hint="product ids, comma separated">
          {(id) => <input id={id} name="products" />}
        </Field>
        <Field label="Vulnerability ids" hint="CVE, GHSA or OSV ids">
          {(id) => <input id={id} name="vulnerability_ids" />}
        </Field>
        <Field label="Aware since" hint="your local time; the clocks run from it">
          {(id) => <input id={id} name="aware_at" type="datetime-local" required defaultValue={localNow()} />}
        </Field>
        <Field label="Aware by">{(id) => <input id={id} name="aware_by" required defaultValue={me?.email ?? ''} />}</Field>
        <Field label="Awareness evidence">{(id) => <input id={id} name="evidence" required className="wide" />}</Field>
        <Field label="Summary (optional)">{(id) => <textarea id={id} name="summary" rows={2} />}</Field>
        <button type="submit" className="primary" disabled={open.isPending}>
          Open case
        </button>
      </form>
      <ErrorNote error={open.error} />
    </Guard>
  );
}
