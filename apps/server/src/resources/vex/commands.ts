import { sha256Digest } from '@svc/release-core';
import { notFound } from '../../errors/server-error.js';
import { getArtifact } from '../artifacts/queries.js';
import { analyzeArtifacts } from '../findings/analysis.js';
import { findingsUsingStatements } from '../findings/queries.js';
import type { Command } from '../unit-of-work.js';
import { parseVex } from './documents.js';
import { insertStatements, type StatementRow } from './queries.js';

export interface AttachedVex {
  format: 'cyclonedx' | 'openvex';
  digest: string;
  statements: StatementRow[];
  /** findings of the artifact whose status now comes from this document */
  findings_applied: number;
}

/**
 * POST /artifacts/{id}/vex: the document's statements are appended (history is never
 * rewritten) and the artifact's findings re-read their status: the latest statement by its
 * own time wins, so an older statement is kept but does not replace a newer one.
 */
export const attachVex: Command<{ artifactId: string; contentType: string; bytes: Uint8Array }, AttachedVex> = async (uow, i) => {
  if (!(await getArtifact(uow.trx, uow.tenant, i.artifactId))) throw notFound(`artifact ${i.artifactId}`);
  const parsed = parseVex(i.contentType, i.bytes, uow.now);
  const digest = sha256Digest(i.bytes);
  const rows = await insertStatements(uow.trx, uow.tenant, i.artifactId, { format: parsed.format, digest, actor: uow.actor.name }, parsed.statements, uow.now);
  await analyzeArtifacts(uow, [i.artifactId]);
  const applied = await findingsUsingStatements(
    uow.trx,
    uow.tenant,
    i.artifactId,
    rows.map((s) => s.id),
  );
  await uow.audit({
    action: 'vex.attach',
    target: `artifact:${i.artifactId}`,
    detail: { format: parsed.format, digest, statements: rows.length, vulnerabilities: [...new Set(rows.map((s) => s.vuln_id))].slice(0, 50) },
  });
  return { format: parsed.format, digest, statements: rows, findings_applied: applied };
};
