import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, ok } from '../../api/client';
import { useCan, useMe } from '../../api/session';
import { ConfirmButton, ErrorNote, Field, Guard, Loading, PageTitle, Pager, Select, When, useListParams } from '../../ui/kit';

type Role = 'admin' | 'operator' | 'viewer';
export const ROLES: readonly (readonly [Role, string])[] = [
  ['viewer', 'viewer (read only)'],
  ['operator', 'operator'],
  ['admin', 'admin'],
];

export function UsersPage() {
  const list = useListParams();
  const client = useQueryClient();
  const can = useCan('users.manage');
  const me = useMe().data;
  const query = { limit: list.limit, offset: list.offset };
  const users = useQuery({ queryKey: ['users', query], queryFn: () => ok(api.GET('/api/v1/users', { params: { query } })), enabled: can.ok, placeholderData: keepPreviousData });
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [role, setRole] = useState<Role>('viewer');
  const create = useMutation({
    mutationFn: () => ok(api.POST('/api/v1/users', { body: { email, password, role } })),
    onSuccess: () => {
      setPassword('');
      return client.invalidateQueries({ queryKey: ['users'] });
    },
  });
  const remove = useMutation({
    mutationFn: (id: string) => ok(api.DELETE('/api/v1/users/{id}', { params: { path: { id } } })),
    onSuccess: () => client.invalidateQueries({ queryKey: ['users'] }),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  const u = users.data;
  return (
    <>
      <PageTitle>Users</PageTitle>
      <Guard perm="users.manage" legend="New user">
        <form onSubmit={submit} className="filters">
          <Field label="Email">{(id) => <input id={id} type="email" required value={email} onChange={(e) => setEmail(e.target.value)} />}</Field>
          <Field label="Initial password">{(id) => <input id={id} type="password" autoComplete="new-password" minLength={8} required value={password} onChange={(e) => setPassword(e.target.value)} />}</Field>
          <Select label="Role" value={role} options={ROLES} onChange={(v) => setRole(v as Role)} />
          <button type="submit" className="primary" disabled={create.isPending}>
            Create user
          </button>
        </form>
        <ErrorNote error={create.error} />
      </Guard>
      <ErrorNote error={users.error ?? remove.error} />
      {!can.ok ? null : users.isPending ? (
        <Loading what="users" />
      ) : u ? (
        <>
          <table>
            <thead>
              <tr>
                <th scope="col">Email</th>
                <th scope="col">Name</th>
                <th scope="col">Role</th>
                <th scope="col">Created</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {u.users.map((user) => (
                <tr key={user.id}>
                  <td>{user.email}</td>
                  <td>{user.display_name}</td>
                  <td>{user.role}</td>
                  <td>
                    <When at={user.created_at} />
                  </td>
                  <td>
                    <ConfirmButton label={`Delete ${user.email}`} danger disabled={user.id === me?.user_id} question={`Delete the user ${user.email}? Their sessions end at once.`} confirm="Delete user" onConfirm={() => remove.mutate(user.id)} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <Pager label="users" total={u.total} offset={list.offset} limit={list.limit} onPage={(offset) => list.set({ offset })} />
        </>
      ) : null}
    </>
  );
}
