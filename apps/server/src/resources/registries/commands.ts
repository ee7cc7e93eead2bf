import { isServerError, ServerError } from '../../errors/server-error.js';
import { isUniqueViolation } from '../../store/tx.js';
import { insertArtifactRecord } from '../artifacts/commands.js';
import type { NewArtifact } from '../artifacts/queries.js';
import type { ArtifactView } from '../artifacts/schemas.js';
import { storeSbom } from '../sboms/commands.js';
import { parseSbom } from '../sboms/documents.js';
import type { Command } from '../unit-of-work.js';
import { insertRegistry, type RegistryRow } from './queries.js';
import type { RegistryView } from './schemas.js';
import { registryView } from './views.js';

const REGISTRY_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9 ._-]{0,63}$/;
const CREDENTIALS_REF_RE = /^env:[A-Z_][A-Z0-9_]{0,127}$/;

function checkRegistryUrl(url: unknown): string {
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

/** POST /registries: an OCI registry by URL; credentials by reference (`env:<VARIABLE>`) only. */
export const createRegistry: Command<{ name: string; url: string; credentials_ref?: string | undefined }, RegistryView> = async (uow, body) => {
  if (!REGISTRY_NAME_RE.test(body.name)) throw new ServerError('REGISTRY_INVALID', 'name: must be 1-64 letters, digits, space, ".", "_" or "-"');
  const url = checkRegistryUrl(body.url);
  const ref = body.credentials_ref ?? null;
  if (ref !== null && !CREDENTIALS_REF_RE.test(ref))
    throw new ServerError('REGISTRY_INVALID', 'credentials_ref: must be env:<VARIABLE> (the secret stays outside the database)');
  let row: RegistryRow;
  try {
    row = await insertRegistry(uow.trx, uow.tenant, { name: body.name, url, credentials_ref: ref }, uow.now);
  } catch (e) {
    if (isUniqueViolation(e)) throw new ServerError('REGISTRY_INVALID', `name: a registry named ${JSON.stringify(body.name)} already exists`);
    throw e;
  }
  await uow.audit({ action: 'registry.create', target: `registry:${row.id}`, detail: { name: row.name, url: row.url } });
  return registryView(row);
};

/**
 * POST /registries/{id}/import, after the image's target is published (remote.ts): the record
 * and its audit row, and the SBOM the image carries as an OCI referrer attached in the same
 * unit of work (one the schemas refuse is not attached: the import stands without it).
 */
export const recordImportedArtifact: Command<
  { artifact: NewArtifact; registry: string; repository: string; tag: string; sbom?: { contentType: string; bytes: Uint8Array } | undefined },
  ArtifactView
> = async (uow, i) => {
  const a = await insertArtifactRecord(uow, i.artifact);
  await uow.audit({
    action: 'artifact.import',
    target: `artifact:${a.id}`,
    detail: { registry: i.registry, repository: i.repository, tag: i.tag, digest: a.digest },
  });
  if (!i.sbom) return a;
  let parsed;
  try {
    parsed = parseSbom(i.sbom.contentType, i.sbom.bytes);
  } catch (e) {
    if (isServerError(e, 'SBOM_INVALID')) return a;
    throw e;
  }
  await storeSbom(uow, a.id, parsed, i.sbom.bytes, 'oci-referrer');
  return { ...a, has_sbom: true };
};
