import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useState, type FormEvent } from 'react';
import { RETURN_REPRESENTATION, api, ok } from '../../api/client';
import { sessionQueries } from '../../api/queries/session';
import { userQueries } from '../../api/queries/users';
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
    ...userQueries.list(query),
    enabled: can.ok,
    placeholderData: keepPreviousData,
  });
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [role, setRole] = useState<Role>('viewer');
  const create = useWrite(() => ok(api.POST('/api/v1/users', { body: { email, password, role } })), userQueries.keys.lists);
  const remove = useWrite((id: string) => ok(api.DELETE('/api/v1/users/{id}', { params: { path: { id } } })), userQueries.keys.lists);
  const client = useQueryClient();
  const [changed, setChanged] = useState<string | undefined>();
  const changeRole = useMutation({
    mutationFn: (v: { id: string; role: Role }) =>
      ok(api.PATCH('/api/v1/users/{id}', { params: { path: { id: v.id } }, body: { role: v.role }, headers: RETURN_REPRESENTATION })),
    onSuccess: async (user) => {
      if (user) setChanged(`${user.email} is now ${user.role}.`);
      await client.invalidateQueries({ queryKey: userQueries.keys.lists });
      // the caller's own role may have changed: their permissions follow
      await client.invalidateQueries({ queryKey: sessionQueries.me().queryKey });
    },
  });
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
      <ErrorNote error={remove.error ?? changeRole.error} />
      {changed !== undefined && !changeRole.isError && <p role="status">{changed}</p>}
      {can.ok && (
        <Paged what="users" result={users} list={list} head={['Email', 'Name', 'Role', 'Created', '']}>
          {(u) =>
            u.users.map((user) => {
              // the server refuses it too (409): said here before anyone tries
              const lastAdmin = user.role === 'admin' && u.counts.admin <= 1;
              return (
                <tr key={user.id}>
                  <td>{user.email}</td>
                  <td>{user.display_name}</td>
                  <td>
                    <RoleSelect
                      email={user.email}
                      role={user.role}
                      disabledReason={
                        lastAdmin
                          ? 'The last admin cannot be demoted: make another user admin first.'
                          : changeRole.isPending
                            ? 'A role change is being saved.'
                            : undefined
                      }
                      onChange={(r) => changeRole.mutate({ id: user.id, role: r })}
                    />
                  </td>
                  <td>
                    <When at={user.created_at} />
                  </td>
                  <td>
                    <ConfirmButton
                      label={`Delete ${user.email}`}
                      danger
                      disabled={user.id === me?.user_id}
                      disabledReason="You cannot delete yourself: another admin can."
                      question={`Delete the user ${user.email}? Their sessions end at once.`}
                      confirm="Delete user"
                      onConfirm={() => remove.mutate(user.id)}
                    />
                  </td>
                </tr>
              );
            })
          }
        </Paged>
      )}
    </>
  );
}

/** A user's role, changed on selection; when disabled, the reason is its title and accessible description. */
function RoleSelect({
  email,
  role,
  disabledReason,
  onChange,
}: {
  email: string;
  role: Role;
  disabledReason?: string | undefined;
  onChange: (r: Role) => void;
}) {
  const reasonId = useId();
  return (
    <>
      <select
        aria-label={`Role of ${email}`}
        value={role}
        disabled={disabledReason !== undefined}
        title={disabledReason}
        aria-describedby={disabledReason !== undefined ? reasonId : undefined}
        onChange={(e) => onChange(e.target.value as Role)}
      >
        {ROLES.map(([v, text]) => (
          <option key={v} value={v}>
            {text}
          </option>
        ))}
      </select>
      {disabledReason !== undefined && (
        <span id={reasonId} className="sr-only">
          {disabledReason}
        </span>
      )}
    </>
  );
}
