import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { useNavigate, useSearchParams } from 'react-router';
import { api, ok } from '../api/client';
import { sessionQueries } from '../api/queries/session';
import { ErrorNote, Field } from '../ui/kit';

/** Only same-site paths are followed after login (no open redirect). */
function safeNext(next: string | null): string {
  return next !== null && next.startsWith('/') && !next.startsWith('//') ? next : '/';
}

export function LoginPage() {
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const client = useQueryClient();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const login = useMutation({
    mutationFn: () => ok(api.POST('/api/v1/auth/login', { body: { email, password } })),
    onSuccess: async () => {
      await client.invalidateQueries({ queryKey: sessionQueries.me().queryKey });
      void navigate(safeNext(params.get('next')), { replace: true });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    login.mutate();
  };
  return (
    <main id="main" className="login">
      <h1>svc console</h1>
      <form onSubmit={submit} aria-label="Log in">
        <Field label="Email">
          {(id) => <input id={id} type="email" autoComplete="username" required value={email} onChange={(e) => setEmail(e.target.value)} />}
        </Field>
        <Field label="Password">
          {(id) => <input id={id} type="password" autoComplete="current-password" required value={password} onChange={(e) => setPassword(e.target.value)} />}
        </Field>
        <ErrorNote error={login.error} />
        <button type="submit" className="primary" disabled={login.isPending}>
          Log in
        </button>
      </form>
    </main>
  );
}
