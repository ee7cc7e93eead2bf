import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { RETURN_REPRESENTATION, api, ok } from '../api/client';
import { profileQueries } from '../api/queries/profile';
import { ErrorNote, Field, Guard, Loading, PageTitle, When } from '../ui/kit';

export function ProfilePage() {
  const client = useQueryClient();
  const profile = useQuery(profileQueries.mine());
  const [displayName, setDisplayName] = useState<string>();
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const save = useMutation({
    mutationFn: (body: { display_name?: string; current_password?: string; new_password?: string }) =>
      ok(api.PATCH('/api/v1/profile', { body, headers: RETURN_REPRESENTATION })),
    onSuccess: (updated) => {
      if (updated) client.setQueryData(profileQueries.mine().queryKey, updated);
      setCurrent('');
      setNext('');
      return client.invalidateQueries({ queryKey: profileQueries.mine().queryKey });
    },
  });
  const p = profile.data;
  const saveName = (e: FormEvent) => {
    e.preventDefault();
    save.mutate({ display_name: displayName ?? p?.display_name ?? '' });
  };
  const savePassword = (e: FormEvent) => {
    e.preventDefault();
    save.mutate({ current_password: current, new_password: next });
  };
  return (
    <>
      <PageTitle>Profile</PageTitle>
      <ErrorNote error={profile.error} />
      {profile.isPending ? (
        <Loading what="your profile" />
      ) : p ? (
        <>
          <dl className="facts">
            <dt>Email</dt>
            <dd>{p.email}</dd>
            <dt>Role</dt>
            <dd>{p.role}</dd>
            <dt>Member since</dt>
            <dd>
              <When at={p.created_at} />
            </dd>
          </dl>
          <Guard perm="profile.write" legend="Display name">
            <form onSubmit={saveName} className="filters">
              <Field label="Display name">
                {(id) => <input id={id} value={displayName ?? p.display_name ?? ''} onChange={(e) => setDisplayName(e.target.value)} />}
              </Field>
              <button type="submit" disabled={save.isPending}>
                Save name
              </button>
            </form>
          </Guard>
          <Guard perm="profile.write" legend="Change password">
            <form onSubmit={savePassword} className="filters">
              <Field label="Current password">
                {(id) => (
                  <input id={id} type="password" autoComplete="current-password" required value={current} onChange={(e) => setCurrent(e.target.value)} />
                )}
              </Field>
              <Field label="New password" hint="at least 8 characters">
                {(id) => (
                  <input id={id} type="password" autoComplete="new-password" required minLength={8} value={next} onChange={(e) => setNext(e.target.value)} />
                )}
              </Field>
              <button type="submit" disabled={save.isPending}>
                Change password
              </button>
            </form>
          </Guard>
          <ErrorNote error={save.error} />
          {save.isSuccess && <p role="status">Saved.</p>}
        </>
      ) : null}
    </>
  );
}
