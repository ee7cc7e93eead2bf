import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, ok } from '../../api/client';
import { apiKeyQueries } from '../../api/queries/api-keys';
import { useCan } from '../../api/session';
import { ConfirmButton, ErrorNote, Field, Guard, PageTitle, Paged, SecretOnce, Select, When, useListParams, useWrite } from '../../ui/kit';
import { ROLES, type Role } from './users';

export function ApiKeysPage() {
  const list = useListParams();
  const can = useCan('api-keys.manage');
  const query = { limit: list.limit, offset: list.offset };
  const keys = useQuery({
    ...apiKeyQueries.list(query),
    enabled: can.ok,
    placeholderData: keepPreviousData,
  });
  const [name, setName] = useState('');
  const [role, setRole] = useState<Role>('viewer');
  const create = useWrite(() => ok(api.POST('/api/v1/api-keys', { body: { name, role } })), apiKeyQueries.keys.lists);
  const revoke = useWrite((id: string) => ok(api.DELETE('/api/v1/api-keys/{id}', { params: { path: { id } } })), apiKeyQueries.keys.lists);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate(undefined);
  };
  return (
    <>
      <PageTitle>API keys</PageTitle>
      <Guard perm="api-keys.manage" legend="New API key">
        <form onSubmit={submit} className="filters">
          <Field label="Key name">{(id) => <input id={id} required value={name} onChange={(e) => setName(e.target.value)} />}</Field>
          <Select label="Role" value={role} options={ROLES} onChange={(v) => setRole(v as Role)} />
          <button type="submit" className="primary" disabled={create.isPending}>
            Create key
          </button>
        </form>
        <ErrorNote error={create.error} />
      </Guard>
      {create.data && <SecretOnce label={`API key ${create.data.name}`} secret={create.data.key} />}
      <ErrorNote error={revoke.error} />
      {can.ok && (
        <Paged what="API keys" result={keys} list={list} head={['Name', 'Prefix', 'Role', 'Last used', 'Revoked', '']}>
          {(k) =>
            k.api_keys.map((key) => (
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
                  <ConfirmButton
                    label={`Revoke ${key.name}`}
                    danger
                    disabled={key.revoked_at !== null}
                    disabledReason="The key is already revoked"
                    question={`Revoke the API key ${key.name}? Every process refuses it at once.`}
                    confirm="Revoke"
                    onConfirm={() => revoke.mutate(key.id)}
                  />
                </td>
              </tr>
            ))
          }
        </Paged>
      )}
    </>
  );
}
