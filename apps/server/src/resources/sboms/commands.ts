import { sha256Digest } from '@svc/release-core';
import { notFound } from '../../errors/server-error.js';
import { getArtifact } from '../artifacts/queries.js';
import type { Command } from '../unit-of-work.js';
import { parseSbom } from './documents.js';
import { upsertSbom } from './queries.js';

export interface AttachedSbom {
  format: string;
  digest: string;
  severities: string[];
}

/** PUT /artifacts/{id}/sbom: the document (checked for its format) replaces any earlier one. */
export const attachSbom: Command<{ artifactId: string; contentType: string; bytes: Uint8Array }, AttachedSbom> = async (uow, { artifactId, contentType, bytes }) => {
  if (!(await getArtifact(uow.trx, uow.tenant, artifactId))) throw notFound(`artifact ${artifactId}`);
  const parsed = parseSbom(contentType, bytes);
  const digest = sha256Digest(bytes);
  await upsertSbom(uow.trx, uow.tenant, artifactId, { format: parsed.format, content_type: parsed.contentType, bytes, digest, severities: parsed.severities }, uow.now);
  await uow.audit({ action: 'artifact.sbom.attach', target: `artifact:${artifactId}`, detail: { format: parsed.format, digest } });
  return { format: parsed.format, digest, severities: parsed.severities };
};
