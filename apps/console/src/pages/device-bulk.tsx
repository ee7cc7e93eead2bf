import { keepPreviousData, useMutation, useQuery } from '@tanstack/react-query';
import { useId, useState, type FormEvent } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { api, ok, type paths, type Schema } from '../api/client';
import { bulkJobQueries } from '../api/queries/bulk-jobs';
import { groupQueries } from '../api/queries/groups';
import { useCan } from '../api/session';
import { BULK_WORDS } from '../ui/event-text';
import { Badge, Download, ErrorNote, Field, Guard, Loading, Mono, PageTitle, Select, ShortId, Table, useListParams, When } from '../ui/kit';

type BulkBody = paths['/api/v1/device-bulk-jobs']['post']['requestBody']['content']['application/json'];
type BulkAction = BulkBody['action'];
type BulkJob = Schema<'/api/v1/device-bulk-jobs/{id}', 'get'>;

/** The actions in the order the form offers them; a Record over the API's union fails to compile when it changes. */
const ACTIONS: Record<BulkAction, string> = {
  'group.add': 'Add to a static group',
  'group.remove': 'Remove from a static group',
  tag: 'Tag',
  untag: 'Remove a tag',
  logs: 'Request logs',
  decommission: 'Decommission',
};
const isAction = (v: string): v is BulkAction => v in ACTIONS;

const quote = (v: string): string => `"${v.replace(/[\\"]/g, (c) => `\\${c}`)}"`;

/**
 * The device list's narrowing as one device filter (docs/device-filter.md): the filter box,
 * the status select (`status = "…"`) and the name search (`name ~ "…"`, the same
 * case-insensitive substring as `q`). Empty when nothing narrows the list.
 */
export function selectionFilter(filter: string, status: string, q: string): string {
  const extra = [...(status ? [`status = ${quote(status)}`] : []), ...(q ? [`name ~ ${quote(q)}`] : [])];
  if (!filter) return extra.join(' and ');
  return extra.length === 0 ? filter : [`(${filter})`, ...extra].join(' and ');
}

/**
 * Bulk actions on the device list: on the ticked devices, or on all the devices the list's
 * narrowing selects (as one filter). Decommission needs the count typed out, as the API does.
 * The job runs in the background; its page shows the progress and each device's outcome.
 */
export function BulkActions({ filter, matching, selected, onClear }: { filter: string; matching: number; selected: string[]; onClear: () => void }) {
  const navigate = useNavigate();
  const [scope, setScope] = useState<'selected' | 'all'>('selected');
  const [action, setAction] = useState<BulkAction>('tag');
  const [groupId, setGroupId] = useState('');
  const [tag, setTag] = useState('');
  const [typed, setTyped] = useState('');
  const name = useId();
  const canGroups = useCan('groups.read');
  const groups = useQuery({
    ...groupQueries.list({ limit: 200 }),
    enabled: canGroups.ok && (action === 'group.add' || action === 'group.remove'),
  });
  const statics = (groups.data?.groups ?? []).filter((g) => g.filter === null);
  const effective = selected.length === 0 && filter !== '' ? 'all' : scope;
  const count = effective === 'selected' ? selected.length : matching;
  const expected = `decommission ${count}`;
  const start = useMutation({
    mutationFn: () => {
      const body: BulkBody = {
        action,
        ...(effective === 'selected' ? { devices: selected } : { filter }),
        ...(action === 'group.add' || action === 'group.remove' ? { group_id: groupId } : {}),
        ...(action === 'tag' || action === 'untag' ? { tag: tag.trim() } : {}),
        ...(action === 'decommission' ? { confirm: typed.trim() } : {}),
      };
      return ok(api.POST('/api/v1/device-bulk-jobs', { body }));
    },
    onSuccess: async (job) => {
      onClear();
      await navigate(`/bulk-jobs/${job.id}`);
    },
  });
  const blocked =
    count === 0
      ? 'Tick devices in the list, or narrow the list with a filter, a status or a name search.'
      : action === 'decommission' && typed.trim() !== expected
        ? `Type "${expected}" to confirm.`
        : (action === 'group.add' || action === 'group.remove') && groupId === ''
          ? 'Choose a static group.'
          : undefined;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (blocked === undefined) start.mutate();
  };
  const reasonId = `${name}-why`;
  return (
    <Guard perm="devices.write" legend="Bulk action">
      <form onSubmit={submit}>
        <fieldset className="plain-fieldset">
          <legend className="sr-only">Devices to act on</legend>
          <div className="row">
            <label>
              <input
                type="radio"
                name={name}
                checked={effective === 'selected'}
                disabled={selected.length === 0}
                aria-describedby={selected.length === 0 ? `${name}-none` : undefined}
                onChange={() => setScope('selected')}
              />{' '}
              The {selected.length} ticked {selected.length === 1 ? 'device' : 'devices'}
            </label>
            {selected.length === 0 && (
              <span id={`${name}-none`} className="reason">
                none ticked
              </span>
            )}
            <label>
              <input
                type="radio"
                name={name}
                checked={effective === 'all'}
                disabled={filter === ''}
                aria-describedby={filter === '' ? `${name}-nofilter` : undefined}
                onChange={() => setScope('all')}
              />{' '}
              All {matching.toLocaleString()} devices matching the filter
            </label>
            {filter === '' ? (
              <span id={`${name}-nofilter`} className="reason">
                apply a filter, a status or a name search first: the whole fleet is not offered
              </span>
            ) : (
              <Mono>{filter}</Mono>
            )}
            {selected.length > 0 && (
              <button type="button" onClick={onClear}>
                Clear the ticks
              </button>
            )}
          </div>
        </fieldset>
        <div className="filters">
          <Select label="Action" value={action} options={Object.entries(ACTIONS)} onChange={(v) => isAction(v) && setAction(v)} />
          {(action === 'group.add' || action === 'group.remove') && (
            <Select
              label="Static group"
              value={groupId}
              options={[['', groups.isPending && canGroups.ok ? 'loading…' : 'choose a group'], ...statics.map((g) => [g.id, g.name] as const)]}
              onChange={setGroupId}
            />
          )}
          {(action === 'tag' || action === 'untag') && (
            <Field label="Tag" hint="lowercase letters, digits and . _ : -">
              {(id) => <input id={id} required value={tag} spellCheck={false} onChange={(e) => setTag(e.target.value)} />}
            </Field>
          )}
          {action === 'decommission' && (
            <Field label={`Type "${expected}" to confirm`} hint="decommissioned devices can no longer check in or receive updates">
              {(id) => <input id={id} value={typed} autoComplete="off" spellCheck={false} onChange={(e) => setTyped(e.target.value)} />}
            </Field>
          )}
          <button
            type="submit"
            className={action === 'decommission' ? 'danger' : 'primary'}
            disabled={blocked !== undefined || start.isPending}
            title={blocked}
            aria-describedby={blocked !== undefined ? reasonId : undefined}
          >
            {ACTIONS[action]}: {count.toLocaleString()} {count === 1 ? 'device' : 'devices'}
          </button>
        </div>
        {blocked !== undefined && (
          <p id={reasonId} className="reason">
            {blocked}
          </p>
        )}
        <ErrorNote error={start.error ?? groups.error} />
      </form>
    </Guard>
  );
}

const OUTCOMES: readonly (readonly [string, string])[] = [
  ['', 'any outcome'],
  ['pending', 'pending'],
  ['succeeded', 'succeeded'],
  ['unchanged', 'unchanged (already so)'],
  ['failed', 'failed'],
];
type Outcome = 'pending' | 'succeeded' | 'unchanged' | 'failed';
const isOutcome = (v: string): v is Outcome => v === 'pending' || v === 'succeeded' || v === 'unchanged' || v === 'failed';
const LOG_REQUEST = /^log request ([0-9a-f-]{36})$/;

/** A bulk job: what it does, its progress (polled until done) and each device's outcome (paged by the server). */
export function BulkJobPage() {
  const id = useParams().id!;
  const job = useQuery({
    ...bulkJobQueries.detail(id),
    refetchInterval: (q) => (q.state.data === undefined || q.state.data.state === 'done' || q.state.data.state === 'failed' ? false : 1_000),
  });
  const j = job.data;
  return (
    <>
      <PageTitle>{j ? `Bulk ${BULK_WORDS[j.action] ?? j.action} of ${j.total.toLocaleString()} devices` : 'Bulk job'}</PageTitle>
      <ErrorNote error={job.error} />
      {job.isPending ? <Loading what="the bulk job" /> : j ? <JobDetail job={j} /> : null}
    </>
  );
}

function JobDetail({ job: j }: { job: BulkJob }) {
  const list = useListParams();
  const outcome = list.get('outcome');
  const processed = j.succeeded + j.failed;
  const query = { limit: list.limit, offset: list.offset, ...(isOutcome(outcome) ? { outcome } : {}) };
  const devices = useQuery({
    // read again as the job moves on
    ...bulkJobQueries.devices(j.id, query, [j.state, processed]),
    placeholderData: keepPreviousData,
  });
  const group = useQuery({
    ...groupQueries.detail(j.group_id!),
    enabled: j.group_id !== null,
  });
  const pct = (v: number) => `${j.total > 0 ? (v / j.total) * 100 : 0}%`;
  const rows = devices.data?.devices ?? [];
  return (
    <>
      <dl className="facts">
        <dt>Action</dt>
        <dd>
          {BULK_WORDS[j.action] ?? j.action}
          {j.tag !== null && (
            <>
              {' '}
              <Badge value={j.tag} />
            </>
          )}
          {j.group_id !== null && (
            <>
              {' '}
              <Link to={`/groups/${j.group_id}`}>{group.data ? `group ${group.data.name}` : 'the group'}</Link>
            </>
          )}
        </dd>
        <dt>Selection</dt>
        <dd>{j.filter === '' ? `${j.total} devices named one by one` : <Mono>{j.filter}</Mono>}</dd>
        <dt>State</dt>
        <dd>
          <Badge value={j.state} />
        </dd>
        <dt>Started by</dt>
        <dd>{j.created_by}</dd>
        <dt>Created</dt>
        <dd>
          <When at={j.created_at} />
        </dd>
        <dt>Finished</dt>
        <dd>
          <When at={j.finished_at} />
        </dd>
      </dl>
      <section aria-labelledby="bulk-progress-h">
        <h2 id="bulk-progress-h">Progress</h2>
        <div className="progress-cell wide">
          <progress max={Math.max(1, j.total)} value={processed} aria-label="Devices processed" className="sr-only" />
          <span className="bar" aria-hidden="true">
            <span className="bar-ok" style={{ width: pct(j.succeeded) }} />
            <span className="bar-bad" style={{ width: pct(j.failed) }} />
          </span>
          <p role="status">
            {processed.toLocaleString()} of {j.total.toLocaleString()} processed: {j.succeeded.toLocaleString()} done (changed or already so),{' '}
            {j.failed.toLocaleString()} failed{j.state === 'done' ? '. Finished.' : j.state === 'queued' ? '; waiting for a server to take the job.' : '.'}
          </p>
        </div>
      </section>
      <section aria-labelledby="bulk-devices-h">
        <h2 id="bulk-devices-h">Devices and outcomes</h2>
        <div className="filters">
          <Select label="Outcome" value={outcome} options={OUTCOMES} onChange={(v) => list.set({ outcome: v })} />
        </div>
        {devices.isPending ? (
          <Loading what="the outcomes" />
        ) : (
          <>
            <ErrorNote error={devices.error} />
            <Table head={['Device', 'Outcome', 'Detail', 'When']} caption="Each device of the job and its outcome" busy={devices.isFetching}>
              {rows.map((d) => {
                const log = d.detail === null ? null : LOG_REQUEST.exec(d.detail);
                return (
                  <tr key={d.name}>
                    <td>
                      <Link to={`/devices/${encodeURIComponent(d.name)}`}>{d.name}</Link>
                    </td>
                    <td>
                      <Badge value={d.outcome} />
                    </td>
                    <td>
                      {log ? (
                        <span className="row">
                          log request <ShortId value={log[1]!} label={`log request of ${d.name}`} />
                          <Download href={`/api/v1/devices/${encodeURIComponent(d.name)}/log-requests/${log[1]}/download`}>
                            Logs of {d.name}, once uploaded
                          </Download>
                        </span>
                      ) : (
                        (d.detail ?? '—')
                      )}
                    </td>
                    <td>
                      <When at={d.at} />
                    </td>
                  </tr>
                );
              })}
            </Table>
            <nav className="pager" aria-label="outcome pages">
              <span role="status">
                {rows.length === 0 ? 'No devices' : `Devices ${(list.offset + 1).toLocaleString()}–${(list.offset + rows.length).toLocaleString()}`}
              </span>
              <button type="button" disabled={list.offset === 0} onClick={() => list.set({ offset: Math.max(0, list.offset - list.limit) })}>
                Previous page
              </button>
              <button type="button" disabled={rows.length < list.limit} onClick={() => list.set({ offset: list.offset + list.limit })}>
                Next page
              </button>
            </nav>
          </>
        )}
      </section>
    </>
  );
}
