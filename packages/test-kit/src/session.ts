/** The headers a browser session sends: its cookie, and the CSRF header cookie-authenticated writes need. */
export interface SessionHeaders {
  cookie: string;
  'x-svc-csrf': '1';
}

/**
 * Logs in through `POST <api>/auth/login` (`api` is the API's base URL, ending in `/api/v1`)
 * and returns the session's headers; any answer but 204 is an error naming the status.
 */
export async function logIn(api: string, credentials: { email: string; password: string }): Promise<SessionHeaders> {
  const res = await fetch(`${api.replace(/\/$/, '')}/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: credentials.email, password: credentials.password }),
  });
  if (res.status !== 204) throw new Error(`login as ${credentials.email}: ${res.status} ${(await res.text()).slice(0, 200)}`);
  const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  if (!cookie) throw new Error(`login as ${credentials.email}: no session cookie`);
  return { cookie, 'x-svc-csrf': '1' };
}
