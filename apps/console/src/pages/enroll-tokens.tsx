import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, ok } from '../api/client';
import { useCan } from '../api/session';
import { ConfirmButton, ErrorNote, Field, Guard, Loading, PageTitle, Pager, SecretOnce, When, useListParams } from '../ui/kit';

export function EnrollTokensPage() {
  const list = useListParams();
  const client = useQueryClient();
  const canWrite = useCan('enroll-tokens.write');
  const query = { limit: list.limit, offset: list.offset };
  const tokens = useQuery({ queryKey: ['enroll-tokens', query], queryFn: () => ok(api.GET('/api/v1/enroll-tokens', { params: { query } })), placeholderData: keepPreviousData });
  const [name, setName] = useState('');
  const [maxUses, setMaxUses] = useState('10');
  const [ttlHours, setTtlHours] = useState('24');
  const create = useMutation({
    mutationFn: () => ok(api.POST('/api/v1/enroll-tokens', { body: { name, max_uses: Number(maxUses), ttl_seconds: Math.round(Number(ttlHours) * 3600) } })),
    onSuccess: () => client.invalidateQueries({ queryKey: ['enroll-tokens'] }),
  });
  const remove = useMutation({
    mutationFn: (id: string) => ok(api.DELETE('/api/v1/enroll-tokens/{id}', { params: { path: { id } } })),
    onSuccess: () => client.invalidateQueries({ queryKey: ['enroll-tokens'] }),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  const t = tokens.data;
  return (
    <>
      <PageTitle>Enrollment tokens</PageTitle>
      <Guard perm="enroll-tokens.write" legend="New token">
        <form onSubmit={submit} className="filters">
          <Field label="Name">{(id) => <input id={id} required value={name} onChange={(e) => setName(e.target.value)} />}</Field>
          <Field label="Maximum uses">{(id) => <input id={id} type="number" min={1} required value={maxUses} onChange={(e) => setMaxUses(e.target.value)} />}</Field>
          <Field label="Valid for (hours)">{(id) => <input id={id} type="number" min={0.1} step="any" required value={ttlHours} onChange={(e) => setTtlHours(e.target.value)} />}</Field>
          <button type="submit" className="primary" disabled={create.isPending}>
            Create token
          </button>
        </form>
        <ErrorNote error={create.error} />
      </Guard>
      {create.data && <SecretOnce label={`Enrollment token ${create.data.name}`} secret={create.data.token} />}
      <ErrorNote error={tokens.error ?? remove.error} />
      {tokens.isPending ? (
        <Loading what="tokens" />
      ) : t ? (
        <>
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Prefix</th>
                <th scope="col">Uses</th>
                <th scope="col">Expires</th>
                <th scope="col">Created</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {t.enroll_tokens.map((tok) => (
                <tr key={tok.id}>
                  <td>{tok.name}</td>
                  <td>
                    <code>{tok.prefix}</code>
                  </td>
                  <td>
                    {tok.uses} / {tok.max_uses}
                  </td>
                  <td>
                    <When at={tok.expires_at} />
                  </td>
                  <td>
                    <When at={tok.created_at} />
                  </td>
                  <td>
                    <ConfirmButton label={`Delete ${tok.name}`} danger disabled={!canWrite.ok} question={`Delete the token ${tok.name}? Devices can no longer enroll with it.`} confirm="Delete" onConfirm={() => remove.mutate(tok.id)} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <Pager label="tokens" total={t.total} offset={list.offset} limit={list.limit} onPage={(offset) => list.set({ offset })} />
        </>
      ) : null}
    </>
  );
}
