/**
 * A registered registry as a remote (spec §4: tag browse and import). Import turns one image
 * into an OCI image-layout tar streamed into the blob store, then publishes it like any upload:
 * signed target first (this file), record and audit row second (commands.ts
 * `recordImportedArtifact`), kind `container`.
 */
import { IDENTIFIER_PATTERNS } from '@svc/release-core';
import { notFound, ServerError } from '../../errors/server-error.js';
import type { Db } from '../../store/tx.js';
import { checkArtifactFields } from '../artifacts/fields.js';
import { publishArtifactTarget, storeArtifactBytes } from '../artifacts/publication.js';
import type { NewArtifact } from '../artifacts/queries.js';
import type { PublishingDeps } from '../publishing.js';
import { CYCLONEDX_TYPE, SPDX_TYPE } from '../sboms/documents.js';
import { fetchArtifactLayer, getManifest, listReferrers, listTags, resolveCredentials, REPOSITORY_RE, TAG_RE, type RegistryTarget } from './oci-client.js';
import { OCI_LAYOUT_TAR, ociLayoutTar } from './oci-layout.js';
import { getRegistry } from './queries.js';
import { SERVER_LIMITS } from '../../limits.js';

async function registryTarget(db: Db, tenantId: string, id: string): Promise<RegistryTarget> {
  const r = await getRegistry(db, tenantId, id);
  if (!r) throw notFound(`registry ${id}`);
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
  const t = await registryTarget(db, tenantId, id);
  const repo = checkRepository(repository);
  return { repository: repo, tags: await listTags(t, repo) };
}

const SBOM_TYPES = [CYCLONEDX_TYPE, SPDX_TYPE];

/** An SBOM the image carries as an OCI referrer (CycloneDX or SPDX JSON), if any. */
export async function referrerSbom(t: RegistryTarget, repository: string, manifestDigest: string): Promise<{ contentType: string; bytes: Buffer } | undefined> {
  for (const r of await listReferrers(t, repository, manifestDigest)) {
    if (!SBOM_TYPES.includes(r.artifactType)) continue;
    const layer = await fetchArtifactLayer(t, repository, r.digest, SBOM_TYPES, SERVER_LIMITS.sboms.maxBytes);
    if (layer) return { contentType: layer.mediaType, bytes: layer.bytes };
  }
  return undefined;
}

/**
 * Pulls the image of `repository:tag` into the blob store and publishes it as a signed target;
 * answers the record to insert, and the SBOM the image carries as an OCI referrer when it has
 * one (read before anything commits). Defaults: name = last repository segment, version = tag.
 */
export async function publishImportedImage(
  deps: PublishingDeps,
  tenantId: string,
  id: string,
  body: { repository: string; tag: string; name?: string | undefined; version?: string | undefined },
): Promise<{ artifact: NewArtifact; sbom: { contentType: string; bytes: Buffer } | undefined }> {
  const t = await registryTarget(deps.db, tenantId, id);
  const repo = checkRepository(body.repository);
  if (!TAG_RE.test(body.tag)) throw new ServerError('REGISTRY_INVALID', 'tag: must be an OCI tag');
  const name = body.name ?? repo.split('/').pop()!;
  const version = body.version ?? body.tag;
  if (!IDENTIFIER_PATTERNS.version.test(version))
    throw new ServerError('REGISTRY_INVALID', `version: tag ${JSON.stringify(body.tag)} is not a valid artifact version; pass "version"`);
  const fields = checkArtifactFields({ name, version, kind: 'container', media_type: OCI_LAYOUT_TAR, filename: `${name}-${version}.oci.tar` });
  const m = await getManifest(t, repo, body.tag);
  const sbom = await referrerSbom(t, repo, m.digest);
  const blob = await storeArtifactBytes(deps, ociLayoutTar(t, repo, body.tag, m));
  return { artifact: await publishArtifactTarget(deps, tenantId, fields, blob, `registry:${id}`), sbom };
}
