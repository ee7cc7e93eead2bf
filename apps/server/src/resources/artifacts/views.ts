/** An artifact row as the API shows it (schemas.ts `Artifact`). */
import type { ArtifactRow } from './queries.js';
import type { ArtifactView } from './schemas.js';

export function artifactView(r: ArtifactRow): ArtifactView {
  return {
    id: r.id,
    name: r.name,
    version: r.version,
    kind: r.kind,
    digest: r.digest,
    length: Number(r.length),
    media_type: r.media_type,
    target: r.target,
    filename: r.filename,
    source: r.source,
    description: r.description,
    labels: r.labels ?? {},
    has_sbom: r.has_sbom === true || r.has_sbom === 1,
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
  };
}
