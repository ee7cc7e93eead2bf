import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, ok } from '../../api/client';
import { useCan, useMe } from '../../api/session';
import { ConfirmButton, ErrorNote, Field, Guard, PageTitle, Paged, Select, When, useListParams, useWrite } from '../../ui/kit';

export type Role = 'admin' | 'operator' | 'viewer';
export const ROLES: readonly (readonly [Role, string])[] = [
  ['viewer', 'viewer (read only)'],
  ['operator', 'operator'],
  ['admin', 'admin'],
];

export function UsersPage() {
  const list = useListParams();
  const can = useCan('users.manage');
  const me = useMe().data;
  const query = { limit: list.limit, offset: list.offset };
  const users = useQuery({
    queryKey: ['users', query],
    queryFn: () => ok(api.GET('/api/v1/users', { params: { query } })),
    enabled: can.ok,
    placeholderData: keepPreviousData,
  });
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [role, setRole] = useState<Role>('viewer');
  const create = useWrite(() => ok(api.POST('/api/v1/users', { body: { email, password, role } })), 'users');
  const remove = useWrite((id: string) => ok(api.DELETE('/api/v1/users/{id}', { params: { path: { id } } })), 'users');
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate(undefined, { onSuccess: () => setPassword('') });
  };
  return (
    <>
      <PageTitle>Users</PageTitle>
      <Guard perm="users.manage" legend="New user">
        <form onSubmit={submit} className="filters">
          <Field label="Email">{(id) => <input id={id} type="email" required value={email} onChange={(e) => setEmail(e.target.value)} />}</Field>
          <Field label="Initial password">
            {(id) => (
              <input
                id={id}
                type="password"
                autoComplete="new-password"
                minLength={8}
                required
                value={password}
                onChange={(e) => setPassword(e.target.value)}
              />
            )}
          </Field>
          <Select label="Role" value={role} options={ROLES} onChange={(v) => setRole(v as Role)} />
          <button type="submit" className="primary" disabled={create.isPending}>
            Create user
          </button>
        </form>
        <ErrorNote error={create.error} />
      </Guard>
      <ErrorNote error={remove.error} />
      {can.ok && (
        <Paged what="users" result={users} list={list} head={['Email', 'Name', 'Role', 'Created', '']}>
          {(u) =>
            u.users.map((user) => (
              <tr key={user.id}>
                <td>{user.email}</td>
                <td>{user.display_name}</td>
                <td>{user.role}</td>
                <td>
                  <When at={user.created_at} />
                </td>
                <td>
                  <ConfirmButton
                    label={`Delete ${user.email}`}
                    danger
                    disabled={user.id === me?.user_id}
                    question={`Delete the user ${user.email}? Their sessions end at once.`}
                    confirm="Delete user"
                    onConfirm={() => remove.mutate(user.id)}
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
