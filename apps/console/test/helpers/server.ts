/** A real server process (apps/server/dist/main.js) on a temp data dir, serving the console build. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, type ServerProcess } from '@svc/e2e';
import { logIn } from '@svc/test-kit';

export const ADMIN = { email: 'admin@console.test', password: 'console-admin-password' } as const;

export interface ConsoleServer {
  server: ServerProcess;
  url: string;
  /** cookie + CSRF headers of an admin session, for setting up data through the API */
  admin: Record<string, string>;
  api<T>(method: string, path: string, body?: unknown, expect?: number): Promise<T>;
  /** creates a user with `role` and returns its credentials */
  user(role: 'admin' | 'operator' | 'viewer'): Promise<{ email: string; password: string }>;
  stop(): Promise<void>;
}

let n = 0;

export async function startConsoleServer(): Promise<ConsoleServer> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-console-test-'));
  const server = await startServer({ dataDir: dir, admin: ADMIN });
  const admin: Record<string, string> = { ...(await logIn(`${server.url}/api/v1`, ADMIN)) };
  const api = async <T>(method: string, path: string, body?: unknown, expect = 200): Promise<T> => {
    const res = await fetch(`${server.url}/api/v1${path}`, {
      method,
      headers: { ...admin, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    if (res.status !== expect) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return (res.status === 204 ? undefined : await res.json()) as T;
  };
  return {
    server,
    url: server.url,
    admin,
    api,
    user: async (role) => {
      const creds = { email: `${role}-${++n}@console.test`, password: 'console-user-password' };
      await api('POST', '/users', { ...creds, role }, 201);
      return creds;
    },
    stop: async () => {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
