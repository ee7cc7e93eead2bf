import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, ok } from '../api/client';
import { enrollTokenQueries } from '../api/queries/enroll-tokens';
import { useCan } from '../api/session';
import { ConfirmButton, ErrorNote, Field, Guard, PageTitle, Paged, SecretOnce, When, useListParams, useWrite } from '../ui/kit';

const DEFAULT_USES = '10';
const DEFAULT_HOURS = '24';

/** The server's status of a token (at its clock, the rule of the counts), in the operator's words. */
const STATUS_LABEL = { active: 'active', expired: 'expired', exhausted: 'used up' } as const;

export function EnrollTokensPage() {
  const list = useListParams();
  const canWrite = useCan('enroll-tokens.write');
  const query = { limit: list.limit, offset: list.offset };
  const tokens = useQuery({
    ...enrollTokenQueries.list(query),
    placeholderData: keepPreviousData,
  });
  const [name, setName] = useState('');
  const [maxUses, setMaxUses] = useState(DEFAULT_USES);
  const [ttlHours, setTtlHours] = useState(DEFAULT_HOURS);
  const create = useWrite(
    () => ok(api.POST('/api/v1/enroll-tokens', { body: { name, max_uses: Number(maxUses), ttl_seconds: Math.round(Number(ttlHours) * 3600) } })),
    enrollTokenQueries.keys.lists,
  );
  const remove = useWrite((id: string) => ok(api.DELETE('/api/v1/enroll-tokens/{id}', { params: { path: { id } } })), enrollTokenQueries.keys.lists);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    // the form empties once the token exists: a second click cannot make a twin with the same name
    create.mutate(undefined, {
      onSuccess: () => {
        setName('');
        setMaxUses(DEFAULT_USES);
        setTtlHours(DEFAULT_HOURS);
      },
    });
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
      <Paged what="tokens" result={tokens} list={list} head={['Name', 'Status', 'Prefix', 'Uses', 'Expires', 'Created', '']}>
        {(t) =>
          t.enroll_tokens.map((tok) => (
            <tr key={tok.id}>
              <td>{tok.name}</td>
              <td>
                <span className={`badge badge-${tok.status}`}>{STATUS_LABEL[tok.status]}</span>
              </td>
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
