import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, ok } from '../../api/client';
import { authorizerKeyQueries } from '../../api/queries/authorizer-keys';
import { useCan } from '../../api/session';
import { Badge, ConfirmButton, ErrorNote, Field, Guard, Mono, PageTitle, Paged, When, useListParams, useWrite } from '../../ui/kit';

/** The customer's Ed25519 release keys: every release must be signed by an active one. */
export function AuthorizerKeysPage() {
  const list = useListParams();
  const canWrite = useCan('keys.write');
  const query = { limit: list.limit, offset: list.offset };
  const keys = useQuery({
    ...authorizerKeyQueries.list(query),
    placeholderData: keepPreviousData,
  });
  const [name, setName] = useState('');
  const [pem, setPem] = useState('');
  const add = useWrite(() => ok(api.POST('/api/v1/authorizer-keys', { body: { name, public_key_pem: pem } })), authorizerKeyQueries.keys.lists);
  const revoke = useWrite((id: string) => ok(api.POST('/api/v1/authorizer-keys/{id}/revoke', { params: { path: { id } } })), authorizerKeyQueries.keys.lists);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    add.mutate(undefined);
  };
  return (
    <>
      <PageTitle>Authorizer keys</PageTitle>
      <Guard perm="keys.write" legend="Register a release key">
        <form onSubmit={submit}>
          <Field label="Key name">{(id) => <input id={id} required value={name} onChange={(e) => setName(e.target.value)} />}</Field>
          <Field label="Public key (PEM)" hint="svc-release keygen writes it as <prefix>.pub">
            {(id) => <textarea id={id} required rows={4} className="mono wide" value={pem} onChange={(e) => setPem(e.target.value)} />}
          </Field>
          <button type="submit" className="primary" disabled={add.isPending}>
            Register key
          </button>
        </form>
        <ErrorNote error={add.error} />
      </Guard>
      <ErrorNote error={revoke.error} />
      <Paged what="keys" result={keys} list={list} head={['Name', 'Key id', 'Status', 'Registered', '']}>
        {(k) =>
          k.authorizer_keys.map((key) => (
            <tr key={key.id}>
              <td>{key.name}</td>
              <td>
                <Mono>{key.keyid}</Mono>
              </td>
              <td>
                <Badge value={key.status} />
              </td>
              <td>
                <When at={key.created_at} />
              </td>
              <td>
                <ConfirmButton
                  label={`Revoke ${key.name}`}
                  danger
                  disabled={!canWrite.ok || key.status !== 'active'}
                  disabledReason={!canWrite.ok ? canWrite.reason : `The key is ${key.status.replace(/_/g, ' ')}`}
                  question={`Revoke ${key.name}? Releases signed by it can no longer be submitted or rolled out.`}
                  confirm="Revoke key"
                  onConfirm={() => revoke.mutate(key.id)}
                />
              </td>
            </tr>
          ))
        }
      </Paged>
    </>
  );
}
