import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Link, useLocation, useNavigate, useParams } from 'react-router';
import { RETURN_REPRESENTATION, api, ok } from '../api/client';
import { deviceQueries } from '../api/queries/devices';
import { groupQueries } from '../api/queries/groups';
import { useCan } from '../api/session';
import {
  ConfirmButton,
  ErrorNote,
  Field,
  fieldErrorId,
  Guard,
  Loading,
  Mono,
  Paged,
  PageTitle,
  SearchBox,
  Select,
  ShortId,
  useListParams,
  useWrite,
  When,
} from '../ui/kit';
import { filterProblem } from './device-filter';

export function GroupsPage() {
  const list = useListParams();
  const query = { limit: list.limit, offset: list.offset };
  const groups = useQuery({
    ...groupQueries.list(query),
    placeholderData: keepPreviousData,
  });
  const notice = (useLocation().state as { notice?: string } | null)?.notice;
  const [name, setName] = useState('');
  const [kind, setKind] = useState<'static' | 'dynamic'>('static');
  const [filter, setFilter] = useState('');
  const create = useWrite(
    () => ok(api.POST('/api/v1/groups', { body: kind === 'dynamic' ? { name, filter: filter.trim() } : { name, members: [] } })),
    groupQueries.keys.lists,
  );
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate(undefined, {
      onSuccess: () => {
        setName('');
        setFilter('');
      },
    });
  };
  const refused = filterProblem(create.error?.message);
  return (
    <>
      <PageTitle>Groups</PageTitle>
      {notice !== undefined && <p role="status">{notice}</p>}
      <Guard perm="groups.write" legend="New group">
        <form onSubmit={submit} className="filters">
          <Field label="Group name">{(id) => <input id={id} required value={name} onChange={(e) => setName(e.target.value)} />}</Field>
          <Select
            label="Kind"
            value={kind}
            options={[
              ['static', 'static: members added by hand'],
              ['dynamic', 'dynamic: members follow a filter'],
            ]}
            onChange={(v) => setKind(v === 'dynamic' ? 'dynamic' : 'static')}
          />
          {kind === 'dynamic' && (
            <Field
              label="Device filter"
              hint="docs/device-filter.md; the members are the devices it selects, refreshed on demand and at every rollout start"
              error={refused ? `Column ${refused.column}: ${refused.problem}` : undefined}
            >
              {(id) => (
                <input
                  id={id}
                  required
                  className="wide mono"
                  spellCheck={false}
                  placeholder='attributes.hw_model = "gw-3" and tags has "eu"'
                  value={filter}
                  aria-invalid={refused !== undefined}
                  aria-describedby={refused ? fieldErrorId(id) : undefined}
                  onChange={(e) => setFilter(e.target.value)}
                />
              )}
            </Field>
          )}
          <button type="submit" className="primary" disabled={create.isPending}>
            Create group
          </button>
        </form>
        {!refused && <ErrorNote error={create.error} />}
        {create.data && (
          <p role="status">
            Created <Link to={`/groups/${create.data.id}`}>{create.data.name}</Link>
            {create.data.filter === null ? ': add its members there.' : ` with the ${create.data.member_count} devices its filter selects.`}
          </p>
        )}
      </Guard>
      <Paged what="groups" result={groups} list={list} head={['Name', 'Kind', 'Members', 'Snapshot digest', 'Updated']}>
        {(g) =>
          g.groups.map((grp) => (
            <tr key={grp.id}>
              <td>
                <Link to={`/groups/${grp.id}`}>{grp.name}</Link>
              </td>
              <td>{grp.filter === null ? 'static' : <span title={grp.filter}>dynamic</span>}</td>
              <td>{grp.member_count}</td>
              <td>
                <ShortId value={grp.snapshot_digest} label="snapshot digest" />
              </td>
              <td>
                <When at={grp.updated_at} />
              </td>
            </tr>
          ))
        }
      </Paged>
    </>
  );
}

export function GroupPage() {
  const id = useParams().id!;
  const client = useQueryClient();
  const group = useQuery(groupQueries.detail(id));
  const [q, setQ] = useState('');
  const candidates = useQuery({
    ...deviceQueries.list({ q, limit: 20 }),
    enabled: q !== '',
  });
  const add = useMutation({
    mutationFn: (devices: string[]) =>
      ok(api.POST('/api/v1/groups/{id}/members', { params: { path: { id } }, body: { devices }, headers: RETURN_REPRESENTATION })),
    onSuccess: (updated) => {
      if (updated) client.setQueryData(groupQueries.detail(id).queryKey, updated);
      return client.invalidateQueries({ queryKey: groupQueries.detail(id).queryKey });
    },
  });
  const remove = useMutation({
    mutationFn: (devices: string[]) =>
      ok(api.POST('/api/v1/groups/{id}/members/remove', { params: { path: { id } }, body: { devices }, headers: RETURN_REPRESENTATION })),
    onSuccess: (updated) => {
      if (updated) client.setQueryData(groupQueries.detail(id).queryKey, updated);
      return client.invalidateQueries({ queryKey: groupQueries.detail(id).queryKey });
    },
  });
  const refresh = useMutation({
    mutationFn: () => ok(api.POST('/api/v1/groups/{id}/refresh', { params: { path: { id } } })),
    onSuccess: () => client.invalidateQueries({ queryKey: groupQueries.detail(id).queryKey }),
  });
  const navigate = useNavigate();
  const drop = useMutation({
    mutationFn: () => ok(api.DELETE('/api/v1/groups/{id}', { params: { path: { id } } })),
    onSuccess: async () => {
      client.removeQueries({ queryKey: groupQueries.detail(id).queryKey });
      await client.invalidateQueries({ queryKey: groupQueries.keys.lists });
      await navigate('/groups', { state: { notice: `Group ${group.data?.name ?? id} deleted.` } });
    },
  });
  const canWrite = useCan('groups.write');
  const g = group.data;
  const members = new Set(g?.members ?? []);
  return (
    <>
      <PageTitle>{g ? `Group ${g.name}` : 'Group'}</PageTitle>
      <ErrorNote error={group.error} />
      {group.isPending ? (
        <Loading what="the group" />
      ) : g ? (
        <>
          <dl className="facts">
            <dt>Kind</dt>
            <dd>{g.filter === null ? 'static' : 'dynamic'}</dd>
            <dt>Members</dt>
            <dd>{g.member_count}</dd>
            <dt>Snapshot digest</dt>
            <dd>
              <ShortId value={g.snapshot_digest} label="snapshot digest" full />
            </dd>
            <dt>Updated</dt>
            <dd>
              <When at={g.updated_at} />
            </dd>
          </dl>
          {g.filter !== null ? (
            <section aria-labelledby="dynamic-h">
              <h2 id="dynamic-h">Dynamic membership</h2>
              <p>
                Members are the devices this filter selects: <Mono>{g.filter}</Mono>{' '}
                <Link to={`/devices?filter=${encodeURIComponent(g.filter)}`}>devices it selects now</Link>
              </p>
              <p className="muted">
                The membership is read again when refreshed and at every rollout start; a signed rollout is bound to the snapshot digest the customer signed, so
                refresh before they sign.
              </p>
              <Guard perm="groups.write">
                <button type="button" disabled={refresh.isPending} onClick={() => refresh.mutate()}>
                  Refresh membership
                </button>
                <span role="status">
                  {refresh.data ? ` Refreshed: ${refresh.data.added} added, ${refresh.data.removed} removed.` : refresh.isPending ? ' Refreshing…' : ''}
                </span>
                <ErrorNote error={refresh.error} />
              </Guard>
            </section>
          ) : (
            <Guard perm="groups.write" legend="Add members">
              <SearchBox label="Find devices by name" value={q} onSearch={setQ} />
              <ErrorNote error={candidates.error ?? add.error} />
              {candidates.data && (
                <ul className="plain">
                  {candidates.data.devices.map((d) => (
                    <li key={d.name}>
                      {d.name}{' '}
                      <button type="button" disabled={members.has(d.name) || add.isPending} onClick={() => add.mutate([d.name])}>
                        {members.has(d.name) ? `${d.name} is a member` : `Add ${d.name}`}
                      </button>
                    </li>
                  ))}
                  {candidates.data.total > candidates.data.devices.length && (
                    <li className="muted">{candidates.data.total - candidates.data.devices.length} more: refine the search</li>
                  )}
                </ul>
              )}
            </Guard>
          )}
          <h2>Members</h2>
          {g.members.length < g.member_count && (
            <p className="muted">
              The first {g.members.length} of {g.member_count} shown.
            </p>
          )}
          <ErrorNote error={remove.error} />
          <ul className="columns">
            {g.members.map((m) => (
              <li key={m}>
                <Link to={`/devices/${encodeURIComponent(m)}`}>{m}</Link>
                {canWrite.ok && g.filter === null && (
                  <>
                    {' '}
                    <button type="button" disabled={remove.isPending} onClick={() => remove.mutate([m])}>
                      Remove<span className="sr-only"> {m}</span>
                    </button>
                  </>
                )}
              </li>
            ))}
          </ul>
          <Guard perm="groups.write" legend="Delete">
            <ConfirmButton
              label="Delete group…"
              danger
              question={`Delete group ${g.name}? Its ${g.member_count} devices stay enrolled; rollouts that targeted it keep naming it. A group with a running rollout cannot be deleted.`}
              confirm="Delete group"
              onConfirm={() => drop.mutate()}
            />
            <ErrorNote error={drop.error} />
          </Guard>
        </>
      ) : null}
    </>
  );
}
