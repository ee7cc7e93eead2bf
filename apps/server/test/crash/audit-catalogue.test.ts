import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { auditCrashSuite, type AuditCrashRow } from '../helpers/audit-crash.js';
import { pushImage, registryAvailable, startRegistry } from '../helpers/oci-registry.js';
import { artifactMultipart, newAuthorizer, type ReleaseFixture } from '../fixtures/release-flow.js';

const json = (r: { body: string }) => JSON.parse(r.body) as Record<string, any>;

/** An artifact published through the API (the state before a change to it). */
async function published(f: ReleaseFixture, name: string): Promise<string> {
  const r = await f.upload({ name, version: '1.0.0', kind: 'config', bytes: `${name} bytes` });
  if (r.status !== 201) throw new Error(`upload ${name}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.id as string;
}

// A real registry for the import row, started on first use and stopped with the suite.
let registry: { dir: string; url: string; proc: ChildProcess } | undefined;
afterAll(async () => {
  registry?.proc.kill('SIGTERM');
  if (registry) await rm(registry.dir, { recursive: true, force: true });
});

const rows: AuditCrashRow[] = [
  {
    name: 'artifact publish (after its signed target is committed)',
    action: 'artifact.publish',
    prepare: async () => {
      // ASCII only: the body travels to the child as a JSON string
      const { payload, contentType } = artifactMultipart({ name: 'pub-crash', version: '1.0.0', kind: 'model', bytes: 'model weights' });
      return {
        request: { method: 'POST', url: '/api/v1/artifacts', payload: payload.toString('utf8'), headers: { 'content-type': contentType } },
        observe: { method: 'GET', url: '/api/v1/artifacts?q=pub-crash' },
      };
    },
  },
  {
    name: 'artifact update',
    action: 'artifact.update',
    prepare: async (f) => {
      const id = await published(f, 'upd-crash');
      return {
        request: { method: 'PATCH', url: `/api/v1/artifacts/${id}`, payload: { description: 'changed' } },
        observe: { method: 'GET', url: `/api/v1/artifacts/${id}` },
      };
    },
  },
  {
    name: 'SBOM attach',
    action: 'artifact.sbom.attach',
    prepare: async (f) => {
      const id = await published(f, 'sbom-crash');
      const bom = JSON.stringify({ bomFormat: 'CycloneDX', specVersion: '1.5', components: [] });
      return {
        request: { method: 'PUT', url: `/api/v1/artifacts/${id}/sbom`, payload: bom, headers: { 'content-type': 'application/vnd.cyclonedx+json' } },
        observe: { method: 'GET', url: `/api/v1/artifacts/${id}/sbom` },
      };
    },
  },
  {
    name: 'registry create',
    action: 'registry.create',
    prepare: async () => ({
      request: { method: 'POST', url: '/api/v1/registries', payload: { name: 'crash-registry', url: 'https://registry.example.com' } },
      observe: { method: 'GET', url: '/api/v1/registries' },
    }),
  },
  {
    name: 'group create',
    action: 'group.create',
    prepare: async (f) => {
      await f.device('crash-member');
      return {
        request: { method: 'POST', url: '/api/v1/groups', payload: { name: 'crash-group', members: ['crash-member'] } },
        observe: { method: 'GET', url: '/api/v1/groups' },
      };
    },
  },
  {
    name: 'group members add',
    action: 'group.members.add',
    prepare: async (f) => {
      await f.device('crash-added');
      const g = json(await f.t.app.inject({ method: 'POST', url: '/api/v1/groups', headers: f.admin, payload: { name: 'crash-growing' } }));
      return {
        request: { method: 'POST', url: `/api/v1/groups/${g.id}/members`, payload: { devices: ['crash-added'] } },
        observe: { method: 'GET', url: `/api/v1/groups/${g.id}` },
      };
    },
  },
  {
    name: 'group members remove',
    action: 'group.members.remove',
    prepare: async (f) => {
      await f.device('crash-removed');
      const g = json(
        await f.t.app.inject({ method: 'POST', url: '/api/v1/groups', headers: f.admin, payload: { name: 'crash-shrinking', members: ['crash-removed'] } }),
      );
      return {
        request: { method: 'POST', url: `/api/v1/groups/${g.id}/members/remove`, payload: { devices: ['crash-removed'] } },
        observe: { method: 'GET', url: `/api/v1/groups/${g.id}` },
      };
    },
  },
  {
    name: 'group delete',
    action: 'group.delete',
    prepare: async (f) => {
      await f.device('crash-deleted-member');
      const g = json(
        await f.t.app.inject({
          method: 'POST',
          url: '/api/v1/groups',
          headers: f.admin,
          payload: { name: 'crash-deleted', members: ['crash-deleted-member'] },
        }),
      );
      return {
        request: { method: 'DELETE', url: `/api/v1/groups/${g.id}` },
        observe: { method: 'GET', url: `/api/v1/groups/${g.id}` },
      };
    },
  },
  {
    name: 'authorizer key register',
    action: 'authorizer-key.register',
    prepare: async () => ({
      request: { method: 'POST', url: '/api/v1/authorizer-keys', payload: { name: 'crash-key', public_key_pem: newAuthorizer().pem } },
      observe: { method: 'GET', url: '/api/v1/authorizer-keys' },
    }),
  },
  {
    name: 'authorizer key revoke',
    action: 'authorizer-key.revoke',
    prepare: async (f) => {
      const k = json(
        await f.t.app.inject({
          method: 'POST',
          url: '/api/v1/authorizer-keys',
          headers: f.admin,
          payload: { name: 'crash-revoked', public_key_pem: newAuthorizer().pem },
        }),
      );
      return { request: { method: 'POST', url: `/api/v1/authorizer-keys/${k.id}/revoke` }, observe: { method: 'GET', url: `/api/v1/authorizer-keys/${k.id}` } };
    },
  },
];

// The import row pulls from a real docker-registry (loud skip locally without it, a failure under CI).
if (registryAvailable()) {
  rows.push({
    name: 'artifact import from a registry (after its signed target is committed)',
    action: 'artifact.import',
    prepare: async (f) => {
      const dir = await mkdtemp(join(tmpdir(), 'svc-crash-registry-'));
      registry = { dir, ...(await startRegistry(dir)) };
      await pushImage(registry.url, 'team/imp-crash', '2.0.0', Buffer.from('layer bytes '.repeat(100)), Buffer.from('{"architecture":"arm64","os":"linux"}'));
      const r = json(
        await f.t.app.inject({ method: 'POST', url: '/api/v1/registries', headers: f.admin, payload: { name: 'crash-source', url: registry.url } }),
      );
      return {
        request: { method: 'POST', url: `/api/v1/registries/${r.id}/import`, payload: { repository: 'team/imp-crash', tag: '2.0.0' } },
        observe: { method: 'GET', url: '/api/v1/artifacts?q=imp-crash' },
      };
    },
  });
}

auditCrashSuite('artifacts, SBOMs, registries, groups and authorizer keys', rows);
