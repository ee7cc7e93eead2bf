import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, ok } from '../api/client';
import { useCan } from '../api/session';
import { ConfirmButton, ErrorNote, Field, Guard, PageTitle, Paged, SecretOnce, When, useListParams, useWrite } from '../ui/kit';

export function EnrollTokensPage() {
  const list = useListParams();
  const canWrite = useCan('enroll-tokens.write');
  const query = { limit: list.limit, offset: list.offset };
  const tokens = useQuery({
    queryKey: ['enroll-tokens', query],
    queryFn: () => ok(api.GET('/api/v1/enroll-tokens', { params: { query } })),
    placeholderData: keepPreviousData,
  });
  const [name, setName] = useState('');
  const [maxUses, setMaxUses] = useState('10');
  const [ttlHours, setTtlHours] = useState('24');
  const create = useWrite(
    () => ok(api.POST('/api/v1/enroll-tokens', { body: { name, max_uses: Number(maxUses), ttl_seconds: Math.round(Number(ttlHours) * 3600) } })),
    'enroll-tokens',
  );
  const remove = useWrite((id: string) => ok(api.DELETE('/api/v1/enroll-tokens/{id}', { params: { path: { id } } })), 'enroll-tokens');
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate(undefined);
  };
  return (
    <>
      <PageTitle>Enrollment tokens</PageTitle>
      <Guard perm="enroll-tokens.write" legend="New token">
        <form onSubmit={submit} className="filters">
          <Field label="Name">{(id) => <input id={id} required value={name} onChange={(e) => setName(e.target.value)} />}</Field>
          <Field label="Maximum uses">
            {(id) => <input id={id} type="number" min={1} required value={maxUses} onChange={(e) => setMaxUses(e.target.value)} />}
          </Field>
          <Field label="Valid for (hours)">
            {(id) => <input id={id} type="number" min={0.1} step="any" required value={ttlHours} onChange={(e) => setTtlHours(e.target.value)} />}
          </Field>
          <button type="submit" className="primary" disabled={create.isPending}>
            Create token
          </button>
        </form>
        <ErrorNote error={create.error} />
      </Guard>
      {create.data && <SecretOnce label={`Enrollment token ${create.data.name}`} secret={create.data.token} />}
      <ErrorNote error={remove.error} />
      <Paged what="tokens" result={tokens} list={list} head={['Name', 'Prefix', 'Uses', 'Expires', 'Created', '']}>
        {(t) =>
          t.enroll_tokens.map((tok) => (
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
                <ConfirmButton
                  label={`Delete ${tok.name}`}
                  danger
                  disabled={!canWrite.ok}
                  question={`Delete the token ${tok.name}? Devices can no longer enroll with it.`}
                  confirm="Delete"
                  onConfirm={() => remove.mutate(tok.id)}
                />
              </td>
            </tr>
          ))
        }
      </Paged>
    </>
  );
}
