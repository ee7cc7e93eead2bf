import { notFound } from '../../errors/server-error.js';
import { isUniqueViolation } from '../../store/tx.js';
import type { Command, UnitOfWork } from '../unit-of-work.js';
import { checkArtifactChanges } from './fields.js';
import { duplicateArtifact } from './publication.js';
import { getArtifact, insertArtifact, updateArtifact, type NewArtifact } from './queries.js';
import type { ArtifactView } from './schemas.js';
import { artifactView } from './views.js';

/**
 * Inserts the record of an artifact whose TUF target is already committed
 * (publication.ts `publishArtifactTarget`); the caller writes the audit row.
 */
export async function insertArtifactRecord(uow: UnitOfWork, a: NewArtifact): Promise<ArtifactView> {
  let id: string;
  try {
    id = await insertArtifact(uow.trx, uow.tenant, a, uow.now);
  } catch (e) {
    if (isUniqueViolation(e)) throw duplicateArtifact(a, e);
    throw e;
  }
  return artifactView((await getArtifact(uow.trx, uow.tenant, id))!);
}

/** POST /artifacts, after the target is published: the record and its audit row. */
export const recordPublishedArtifact: Command<NewArtifact, ArtifactView> = async (uow, a) => {
  const artifact = await insertArtifactRecord(uow, a);
  await uow.audit({
    action: 'artifact.publish',
    target: `artifact:${artifact.id}`,
    detail: { name: artifact.name, version: artifact.version, kind: artifact.kind, digest: artifact.digest, target: artifact.target },
  });
  return artifact;
};

/** PATCH /artifacts/{id}: description and labels (the fields are checked before the lookup). */
export const updateArtifactFields: Command<{ id: string; body: Record<string, unknown> }, ArtifactView> = async (uow, { id, body }) => {
  const changes = checkArtifactChanges(body);
  if (!(await updateArtifact(uow.trx, uow.tenant, id, changes, uow.now))) throw notFound(`artifact ${id}`);
  const artifact = artifactView((await getArtifact(uow.trx, uow.tenant, id))!);
  await uow.audit({ action: 'artifact.update', target: `artifact:${artifact.id}`, detail: { fields: Object.keys(body) } });
  return artifact;
};
