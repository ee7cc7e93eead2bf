/**
 * Registries (spec 4: create, list, tag browse, import). Import turns one image manifest and
 * its blobs into an OCI image-layout tar (oci-layout, index.json, blobs/sha256/...) streamed
 * into the blob store - digests verified on the way - and then publishes it like any upload:
 * signed target first, record second (spec 1.2), kind `container`.
 */
import { pack as tarPack } from 'tar-stream';
import { PassThrough } from 'node:stream';
import { isUniqueViolation, type Db } from '../store/tx.js';
import { isUuid } from '../resources/ids.js';
import type { PipelineDeps } from '../resources/pipeline-deps.js';
import { ARTIFACT_VERSION_RE, checkArtifactFields, publishArtifact, storeArtifactBytes, type ArtifactView } from './artifacts.js';
import { blobStream, getManifest, listTags, resolveCredentials, REPOSITORY_RE, TAG_RE, type Descriptor, type RegistryTarget } from './registry-client.js';
import { ServerError } from '../errors/server-error.js';

export const OCI_LAYOUT_TAR = 'application/vnd.oci.image.layout.v1+tar';

export interface RegistryView {
  id: string;
  name: string;
  url: string;
  credentials_ref: string | null;
  created_at: string;
}

function view(r: { id: string; name: string; url: string; credentials_ref: string | null; created_at: Date }): RegistryView {
  return { id: r.id, name: r.name, url: r.url, credentials_ref: r.credentials_ref, created_at: r.created_at.toISOString() };
}

export function checkRegistryUrl(url: unknown): string {
  let u: URL;
  try {
    u = new URL(String(url));
  } catch {
    throw new ServerError('REGISTRY_INVALID', 'url: must be an absolute http(s) URL');
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new ServerError('REGISTRY_INVALID', 'url: must use https (or http for a local registry)');
  // secrets never live in the URL (and so never in the database): use credentials_ref
  if (u.username || u.password) throw new ServerError('REGISTRY_INVALID', 'url: must not carry credentials; use credentials_ref');
  if (u.search || u.hash) throw new ServerError('REGISTRY_INVALID', 'url: must not have a query or fragment');
  return u.toString().replace(/\/$/, '');
}

export async function createRegistry(db: Db, tenantId: string, body: { name: string; url: string; credentials_ref?: string }, now: Date): Promise<RegistryView> {
  if (!/^[A-Za-z0-9][A-Za-z0-9 ._-]{0,63}$/.test(body.name)) throw new ServerError('REGISTRY_INVALID', 'name: must be 1-64 letters, digits, space, ".", "_" or "-"');
  const url = checkRegistryUrl(body.url);
  const ref = body.credentials_ref ?? null;
  if (ref !== null && !/^env:[A-Z_][A-Z0-9_]{0,127}$/.test(ref)) throw new ServerError('REGISTRY_INVALID', 'credentials_ref: must be env:<VARIABLE> (the secret stays outside the database)');
  try {
    const r = await db.insertInto('registries').values({ tenant_id: tenantId, name: body.name, url, credentials_ref: ref, created_at: now }).returningAll().executeTakeFirstOrThrow();
    return view(r);
  } catch (e) {
    if (isUniqueViolation(e)) throw new ServerError('REGISTRY_INVALID', `name: a registry named ${JSON.stringify(body.name)} already exists`);
    throw e;
  }
}

export async function listRegistries(db: Db, tenantId: string, limit: number, offset: number): Promise<{ registries: RegistryView[]; total: number }> {
  const rows = await db.selectFrom('registries').selectAll().where('tenant_id', '=', tenantId).orderBy('created_at').orderBy('id').limit(limit).offset(offset).execute();
  const total = await db.selectFrom('registries').select((eb) => eb.fn.countAll<string>().as('n')).where('tenant_id', '=', tenantId).executeTakeFirstOrThrow();
  return { registries: rows.map(view), total: Number(total.n) };
}

async function target(db: Db, tenantId: string, id: string): Promise<RegistryTarget> {
  const r = isUuid(id) ? await db.selectFrom('registries').selectAll().where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst() : undefined;
  if (!r) throw new ServerError('NOT_FOUND', `registry ${id} not found`);
  const auth = resolveCredentials(r.credentials_ref);
  return auth ? { url: r.url, authorization: auth } : { url: r.url };
}

function checkRepository(repository: unknown): string {
  if (typeof repository !== 'string' || repository.length > 255 || !REPOSITORY_RE.test(repository)) {
    throw new ServerError('REGISTRY_INVALID', 'repository: must be an OCI repository name like "team/app"');
  }
  return repository;
}

export async function browseTags(db: Db, tenantId: string, id: string, repository: unknown): Promise<{ repository: string; tags: string[] }> {
  const t = await target(db, tenantId, id);
  const repo = checkRepository(repository);
  return { repository: repo, tags: await listTags(t, repo) };
}

export async function importImage(
  deps: PipelineDeps,
  tenantId: string,
  id: string,
  body: { repository: string; tag: string; name?: string; version?: string },
): Promise<ArtifactView> {
  const t = await target(deps.db, tenantId, id);
  const repo = checkRepository(body.repository);
  if (!TAG_RE.test(body.tag)) throw new ServerError('REGISTRY_INVALID', 'tag: must be an OCI tag');
  const name = body.name ?? repo.split('/').pop()!;
  const version = body.version ?? body.tag;
  if (!ARTIFACT_VERSION_RE.test(version)) throw new ServerError('REGISTRY_INVALID', `version: tag ${JSON.stringify(body.tag)} is not a valid artifact version; pass "version"`);
  const fields = checkArtifactFields({ name, version, kind: 'container', media_type: OCI_LAYOUT_TAR, filename: `${name}-${version}.oci.tar` });
  const m = await getManifest(t, repo, body.tag);
  const blob = await storeArtifactBytes(deps, ociLayoutTar(t, repo, body.tag, m));
  return publishArtifact(deps, tenantId, fields, blob, `registry:${id}`);
}

/** OCI image layout (image-spec "image-layout") as a tar stream; blobs are fetched one at a time. */
function ociLayoutTar(t: RegistryTarget, repo: string, tag: string, m: { bytes: Buffer; digest: string; mediaType: string; config: Descriptor; layers: Descriptor[] }): PassThrough {
  const pack = tarPack();
  const out = new PassThrough();
  pack.on('error', (e) => out.destroy(e));
  pack.pipe(out);
  const mtime = new Date(0); // deterministic archive bytes for the same image
  const small = (name: string, bytes: Buffer) => new Promise<void>((res, rej) => pack.entry({ name, size: bytes.length, mtime }, bytes, (e) => (e ? rej(e) : res())));
  void (async () => {
    try {
      await small('oci-layout', Buffer.from('{"imageLayoutVersion":"1.0.0"}'));
      const index = { schemaVersion: 2, manifests: [{ mediaType: m.mediaType, digest: m.digest, size: m.bytes.length, annotations: { 'org.opencontainers.image.ref.name': tag } }] };
      await small('index.json', Buffer.from(JSON.stringify(index)));
      await small(`blobs/sha256/${m.digest.slice(7)}`, m.bytes);
      const seen = new Set<string>();
      for (const d of [m.config, ...m.layers]) {
        if (seen.has(d.digest)) continue;
        seen.add(d.digest);
        await new Promise<void>((res, rej) => {
          const entry = pack.entry({ name: `blobs/sha256/${d.digest.slice(7)}`, size: d.size, mtime }, (e) => (e ? rej(e) : res()));
          void (async () => {
            try {
              for await (const chunk of blobStream(t, repo, d)) if (!entry.write(chunk)) await new Promise<void>((r) => entry.once('drain', () => r()));
              entry.end(undefined as never);
            } catch (e) {
              entry.destroy(e as Error);
              rej(e);
            }
          })();
        });
      }
      pack.finalize();
    } catch (e) {
      out.destroy(e as Error);
    }
  })();
  return out;
}
