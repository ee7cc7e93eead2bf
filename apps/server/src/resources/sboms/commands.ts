import { sha256Digest } from '@svc/release-core';
import { notFound } from '../../errors/server-error.js';
import { getArtifact } from '../artifacts/queries.js';
import { analyzeArtifacts } from '../findings/analysis.js';
import type { Command } from '../unit-of-work.js';
import { parseSbom, type ParsedSbom } from './documents.js';
import { replaceComponents, upsertSbom } from './queries.js';

export interface AttachedSbom {
  format: string;
  digest: string;
  spec_version: string;
  components: number;
  findings: number;
}

/**
 * PUT /artifacts/{id}/sbom: the document (validated against its schema) replaces any earlier
 * one, its components replace the artifact's index, and the artifact is matched against the
 * feeds at once (its findings are current when this commits).
 */
export const attachSbom: Command<{ artifactId: string; contentType: string; bytes: Uint8Array; source?: string }, AttachedSbom> = async (
  uow,
  { artifactId, contentType, bytes, source },
) => {
  if (!(await getArtifact(uow.trx, uow.tenant, artifactId))) throw notFound(`artifact ${artifactId}`);
  return storeSbom(uow, artifactId, parseSbom(contentType, bytes), bytes, source);
};

/** Stores a parsed SBOM for an artifact that exists (attach, or an import's OCI referrer). */
export async function storeSbom(
  uow: Parameters<typeof attachSbom>[0],
  artifactId: string,
  parsed: ParsedSbom,
  bytes: Uint8Array,
  source?: string,
): Promise<AttachedSbom> {
  const digest = sha256Digest(bytes);
  await upsertSbom(uow.trx, uow.tenant, artifactId, { format: parsed.format, content_type: parsed.contentType, bytes, digest }, uow.now);
  await replaceComponents(uow.trx, uow.tenant, artifactId, parsed.components);
  const analysis = await analyzeArtifacts(uow, [artifactId]);
  await uow.audit({
    action: 'artifact.sbom.attach',
    target: `artifact:${artifactId}`,
    detail: { format: parsed.format, digest, ...(source ? { source } : {}) },
  });
  return { format: parsed.format, digest, spec_version: parsed.specVersion, components: parsed.components.length, findings: analysis.findings };
}
