import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { RoutePermission } from '../auth/permissions.js';
import { isBlobError, parseRangeHeader, type ByteRangeRequest } from '../blobs/index.js';
import { isSigningRepoError } from './errors.js';
import type { RepoFile } from './repo-files.js';
import type { SigningRepository } from './repository.js';

export interface SigningRepoRoutesOptions {
  repo: SigningRepository;
  /**
   * `config.permission` of both routes. Default `'artifacts.read'` (an operator
   * credential); the device channel mounts them with its own mTLS check and
   * `'public'` (the app's onRequest hook then leaves authentication to it).
   */
  permission?: RoutePermission;
  /** Extra tenant check (e.g. the caller's tenant or the mTLS peer's tenant); false answers 404. */
  authorizeTenant?: (request: FastifyRequest, tenantId: string) => boolean | Promise<boolean>;
}

const MetadataParams = Type.Object({
  tenantId: Type.String({ maxLength: 64 }),
  file: Type.String({ maxLength: 64 }),
});
const TargetParams = Type.Object({
  tenantId: Type.String({ maxLength: 64 }),
  '*': Type.String({ maxLength: 700 }),
});

/**
 * Read-only HTTP view of the tenant TUF repositories, laid out as a TUF client
 * expects with consistent snapshots:
 *   GET /tuf/{tenantId}/metadata/{N.root.json | timestamp.json | N.snapshot.json | N.targets.json}
 *   GET /tuf/{tenantId}/targets/{dir}/{sha256hex}.{basename}
 * Byte ranges (206 / 416), strong ETags and If-None-Match (304). All file logic is
 * in `SigningRepository.openRepoFile`, so another transport can serve the same bytes.
 */
export const signingRepoRoutes: FastifyPluginAsync<SigningRepoRoutesOptions> = async (app, opts) => {
  const config = { permission: opts.permission ?? ('artifacts.read' as const) };
  const serve = async (request: FastifyRequest, reply: FastifyReply, tenantId: string, repoPath: string, immutable: boolean) => {
    const notFound = () => reply.code(404).send({ error: `not found: ${repoPath}` });
    if (opts.authorizeTenant && !(await opts.authorizeTenant(request, tenantId))) return notFound();
    let range: ByteRangeRequest | undefined;
    let file: RepoFile;
    try {
      range = parseRangeHeader(request.headers.range);
      file = await opts.repo.openRepoFile(tenantId, repoPath, range);
    } catch (e) {
      if (isSigningRepoError(e, 'METADATA_NOT_FOUND') || isSigningRepoError(e, 'TARGET_NOT_FOUND')) return notFound();
      if (isBlobError(e, 'BLOB_RANGE_INVALID')) return unsatisfiable(reply, opts.repo, tenantId, repoPath, e.message);
      throw e;
    }
    void reply
      .header('accept-ranges', 'bytes')
      .header('etag', file.etag)
      .header('content-type', file.contentType)
      .header('cache-control', immutable ? 'public, max-age=31536000, immutable' : 'no-cache');
    if (request.headers['if-none-match'] === file.etag) {
      file.stream.destroy();
      return reply.code(304).send();
    }
    void reply.header('content-length', String(file.length));
    if (file.range) {
      void reply.code(206).header('content-range', `bytes ${file.range.start}-${file.range.end}/${file.totalLength}`);
    }
    return reply.send(file.stream);
  };

  app.get<{ Params: { tenantId: string; file: string } }>(
    '/tuf/:tenantId/metadata/:file',
    { config, schema: { params: MetadataParams } },
    // Only timestamp.json and root.json change; versioned files never do.
    (request, reply) => {
      const { tenantId, file } = request.params;
      return serve(request, reply, tenantId, `metadata/${file}`, file !== 'timestamp.json' && file !== 'root.json');
    },
  );
  app.get<{ Params: { tenantId: string; '*': string } }>('/tuf/:tenantId/targets/*', { config, schema: { params: TargetParams } }, (request, reply) =>
    serve(request, reply, request.params.tenantId, `targets/${request.params['*']}`, true),
  );
};

/** 416 with `Content-Range: bytes * /<length>` (RFC 9110 15.5.17) when the file exists. */
async function unsatisfiable(reply: FastifyReply, repo: SigningRepository, tenantId: string, repoPath: string, message: string) {
  try {
    const whole = await repo.openRepoFile(tenantId, repoPath);
    whole.stream.destroy();
    void reply.header('content-range', `bytes */${whole.totalLength}`);
  } catch (e) {
    if (isSigningRepoError(e, 'METADATA_NOT_FOUND') || isSigningRepoError(e, 'TARGET_NOT_FOUND')) {
      return reply.code(404).send({ error: `not found: ${repoPath}` });
    }
    throw e;
  }
  return reply.code(416).send({ error: `range: ${message}` });
}
