import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, ok } from '../../api/client';
import { useCan } from '../../api/session';
import { ConfirmButton, ErrorNote, Field, Guard, Loading, PageTitle, Pager, SecretOnce, Select, When, useListParams } from '../../ui/kit';
import { ROLES } from './users';

export function ApiKeysPage() {
  const list = useListParams();
  const client = useQueryClient();
  const can = useCan('api-keys.manage');
  const query = { limit: list.limit, offset: list.offset };
  const keys = useQuery({ queryKey: ['api-keys', query], queryFn: () => ok(api.GET('/api/v1/api-keys', { params: { query } })), enabled: can.ok, placeholderData: keepPreviousData });
  const [name, setName] = useState('');
  const [role, setRole] = useState<'admin' | 'operator' | 'viewer'>('viewer');
  const create = useMutation({
    mutationFn: () => ok(api.POST('/api/v1/api-keys', { body: { name, role } })),
    onSuccess: () => client.invalidateQueries({ queryKey: ['api-keys'] }),
  });
  const revoke = useMutation({
    mutationFn: (id: string) => ok(api.DELETE('/api/v1/api-keys/{id}', { params: { path: { id } } })),
    onSuccess: () => client.invalidateQueries({ queryKey: ['api-keys'] }),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  const k = keys.data;
  return (
    <>
      <PageTitle>API keys</PageTitle>
      <Guard perm="api-keys.manage" legend="New API key">
        <form onSubmit={submit} className="filters">
          <Field label="Key name">{(id) => <input id={id} required value={name} onChange={(e) => setName(e.target.value)} />}</Field>
          <Select label="Role" value={role} options={ROLES} onChange={(v) => setRole(v as typeof role)} />
          <button type="submit" className="primary" disabled={create.isPending}>
            Create key
          </button>
        </form>
        <ErrorNote error={create.error} />
      </Guard>
      {create.data && <SecretOnce label={`API key ${create.data.name}`} secret={create.data.key} />}
      <ErrorNote error={keys.error ?? revoke.error} />
      {!can.ok ? null : keys.isPending ? (
        <Loading what="API keys" />
      ) : k ? (
        <>
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Prefix</th>
                <th scope="col">Role</th>
                <th scope="col">Last used</th>
                <th scope="col">Revoked</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {k.api_keys.map((key) => (
                <tr key={key.id}>
                  <td>{key.name}</td>
                  <td>
                    <code>{key.prefix}</code>
                  </td>
                  <td>{key.role}</td>
                  <td>
                    <When at={key.last_used_at} />
                  </td>
                  <td>
                    <When at={key.revoked_at} />
                  </td>
                  <td>
                    <ConfirmButton label={`Revoke ${key.name}`} danger disabled={key.revoked_at !== null} question={`Revoke the API key ${key.name}? Every process refuses it at once.`} confirm="Revoke" onConfirm={() => revoke.mutate(key.id)} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <Pager label="API keys" total={k.total} offset={list.offset} limit={list.limit} onPage={(offset) => list.set({ offset })} />
        </>
      ) : null}
    </>
  );
}
