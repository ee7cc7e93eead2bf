import { createPrivateKey, sign } from 'node:crypto';
import { Metadata, MetadataKind, Signature } from '@tufjs/models';
import { auditCrashSuite } from '../helpers/audit-crash.js';
import { signingKeyFromPem } from '../../src/signing-repo/index.js';
import type { ReleaseFixture } from '../fixtures/release-flow.js';

/** The tenant's repository exists before the request (a crash must find nothing else to create). */
async function repoReady(f: ReleaseFixture): Promise<string> {
  await f.repo.ensureTenantRepo(f.t.tenantId);
  return f.t.tenantId;
}

/** A prepared rotation of the tenant, made through the API unless one is pending. */
async function prepared(f: ReleaseFixture): Promise<{ unsigned_root: unknown }> {
  const pending = await f.api('GET', '/api/v1/tuf-key-rotations/pending');
  if (pending.status === 200) return pending.body as { unsigned_root: unknown };
  const r = await f.api('POST', '/api/v1/tuf-key-rotations', { roles: ['snapshot'], root_signing: 'offline' });
  if (r.status !== 201) throw new Error(`prepare: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body as { unsigned_root: unknown };
}

const rootMetadata = (tenant: string) => ({ method: 'GET' as const, url: `/api/v1/tuf/${tenant}/metadata/root.json` });

auditCrashSuite('TUF online key rotations and the root key custody', [
  {
    name: 'online key rotation signed by the server-held root key',
    action: 'tuf.online-keys.rotate',
    prepare: async (f) => {
      const tenant = await repoReady(f);
      return {
        request: { method: 'POST', url: '/api/v1/tuf-key-rotations', payload: { roles: ['targets', 'timestamp'], root_signing: 'server' } },
        observe: rootMetadata(tenant),
      };
    },
  },
  {
    name: 'online key rotation prepared for offline signing',
    action: 'tuf.online-keys.prepare',
    prepare: async (f) => {
      await repoReady(f);
      return {
        request: { method: 'POST', url: '/api/v1/tuf-key-rotations', payload: { roles: ['snapshot'], root_signing: 'offline' } },
        observe: { method: 'GET', url: '/api/v1/tuf-key-rotations/pending' },
      };
    },
  },
  {
    name: 'prepared rotation cancelled',
    action: 'tuf.online-keys.cancel',
    prepare: async (f) => {
      await prepared(f);
      return { request: { method: 'DELETE', url: '/api/v1/tuf-key-rotations/pending' }, observe: { method: 'GET', url: '/api/v1/tuf-key-rotations/pending' } };
    },
  },
  {
    name: 'root signed offline accepted, its pending keys activated',
    action: 'tuf.online-keys.rotate',
    prepare: async (f) => {
      const tenant = await repoReady(f);
      const { unsigned_root } = await prepared(f);
      const pem = await f.repo.exportRootKey(tenant);
      const md = Metadata.fromJSON(MetadataKind.Root, unsigned_root as Parameters<typeof Metadata.fromJSON>[1]);
      md.sign((data) => new Signature({ keyID: signingKeyFromPem(pem).keyId, sig: sign(null, data, createPrivateKey(pem)).toString('hex') }), true);
      return { request: { method: 'POST', url: '/api/v1/tuf-key-rotations/pending/signed-root', payload: md.toJSON() }, observe: rootMetadata(tenant) };
    },
  },
  {
    name: 'root key deleted from the server into offline custody',
    action: 'tuf.root-key.delete',
    prepare: async (f) => {
      const tenant = await repoReady(f);
      const keyId = (await f.repo.keys.load(tenant, 'root'))!.keyId;
      const db = f.t.testStore.store.db;
      return {
        request: { method: 'DELETE', url: `/api/v1/tuf-root-key?key_id=${keyId}` },
        // no route lists the server-held root key
        observe: () => db.selectFrom('wrapped_keys').select('key_id').where('key_id', '=', `${tenant}/tuf/root`).execute(),
      };
    },
  },
]);
