import { E2eError } from './errors.js';

/** Fields of contracts §6 that the scenarios script against. */
export interface ArtifactRecord {
  id: string;
  name: string;
  version: string;
  kind: string;
  digest: string;
  length: number;
  media_type: string;
  target: string;
}
export interface GroupRecord {
  id: string;
  name: string;
  members: string[];
  snapshot_digest: string;
}
export interface ReleaseRecord {
  id: string;
  product: string;
  version: string;
  payload_digest: string;
  envelope_digest: string;
  target: string;
}
export interface RolloutRecord {
  id: string;
  kind: 'signed' | 'legacy';
  release_id: string | null;
  transaction_id: string | null;
  status: string;
  rollouts?: { rollout_id: string; component: string; group: number; position: number; artifact_id: string }[];
  [k: string]: unknown;
}

/**
 * The operator REST API over real HTTP (fetch), as a session-cookie user. Every call states
 * the status it expects; anything else fails with HTTP_STATUS carrying the `error` line.
 */
export class Api {
  private cookie = '';

  constructor(readonly baseUrl: string) {}

  async login(email: string, password: string): Promise<void> {
    const res = await fetch(`${this.baseUrl}/api/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password }),
    });
    if (res.status !== 204) throw new E2eError('HTTP_STATUS', `POST /auth/login: ${res.status} ${await res.text()}`);
    this.cookie = (res.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  }

  /** One request; `expect` is the status (or statuses) that count as success. */
  async raw(method: string, path: string, body?: unknown, expect: number | number[] = [200, 201, 202, 204]): Promise<Response> {
    const form = body instanceof FormData;
    const res = await fetch(`${this.baseUrl}/api/v1${path}`, {
      method,
      // the CSRF header every cookie-authenticated write needs (docs/server.md)
      headers: { cookie: this.cookie, 'x-svc-csrf': '1', ...(body !== undefined && !form ? { 'content-type': 'application/json' } : {}) },
      ...(body === undefined ? {} : { body: form ? body : JSON.stringify(body) }),
    });
    const ok = Array.isArray(expect) ? expect.includes(res.status) : res.status === expect;
    if (!ok) throw new E2eError('HTTP_STATUS', `${method} ${path}: ${res.status} ${(await res.text()).slice(0, 500)}`);
    return res;
  }

  async json<T>(method: string, path: string, body?: unknown, expect?: number | number[]): Promise<T> {
    const res = await this.raw(method, path, body, expect);
    return (res.status === 204 ? null : await res.json()) as T;
  }

  get<T>(path: string): Promise<T> {
    return this.json<T>('GET', path, undefined, 200);
  }

  /** `POST /artifacts` multipart (text fields first, then the file: contracts §6). */
  uploadArtifact(a: { name: string; version: string; kind: string; filename: string; bytes: Uint8Array; mediaType?: string }): Promise<ArtifactRecord> {
    const form = new FormData();
    form.set('name', a.name);
    form.set('version', a.version);
    form.set('kind', a.kind);
    if (a.mediaType) form.set('media_type', a.mediaType);
    form.set('file', new Blob([a.bytes]), a.filename);
    return this.json<ArtifactRecord>('POST', '/artifacts', form, 201);
  }

  /** The caller's tenant (`GET /auth/me`). */
  async tenantId(): Promise<string> {
    return (await this.get<{ tenant_id: string }>('/auth/me')).tenant_id;
  }

  /** A fresh enrollment token usable `maxUses` times (shown once). */
  async enrollToken(name: string, maxUses: number): Promise<string> {
    return (await this.json<{ token: string }>('POST', '/enroll-tokens', { name, max_uses: maxUses }, 201)).token;
  }
}
