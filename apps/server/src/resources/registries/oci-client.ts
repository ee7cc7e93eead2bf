/**
 * A small OCI distribution API client (tags list, manifest, blobs) for registry browse and
 * import. Every response is bounded and every blob digest is verified while streaming, so a
 * registry can neither exhaust memory nor slip in bytes other than the manifest names.
 */
import { createHash } from 'node:crypto';
import { digestFromHex, isDigest, sha256Digest } from '@svc/release-core';
import { ServerError } from '../../errors/server-error.js';
import { SERVER_LIMITS } from '../../limits.js';

export const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
export const DOCKER_MANIFEST = 'application/vnd.docker.distribution.manifest.v2+json';
const TIMEOUT_MS = 30_000;
// OCI distribution spec: repository name and tag grammar
export const REPOSITORY_RE = /^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*)*$/;
export const TAG_RE = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
}

export interface RegistryTarget {
  url: string;
  /** Authorization header value resolved from the credentials reference, if any */
  authorization?: string;
}

/** `env:NAME` -> Basic auth from the `user:password` in that variable (the secret never enters the database). */
export function resolveCredentials(ref: string | null): string | undefined {
  if (!ref) return undefined;
  if (!ref.startsWith('env:'))
    throw new ServerError('REGISTRY_INVALID', `credentials_ref: only env:<VARIABLE> references are supported, got ${JSON.stringify(ref)}`);
  const value = process.env[ref.slice(4)];
  if (value === undefined) throw new ServerError('REGISTRY_INVALID', `credentials_ref: environment variable ${ref.slice(4)} is not set on the server`);
  return `Basic ${Buffer.from(value).toString('base64')}`;
}

async function request(t: RegistryTarget, path: string, accept?: string): Promise<Response> {
  const headers: Record<string, string> = {};
  if (accept) headers['accept'] = accept;
  if (t.authorization) headers['authorization'] = t.authorization;
  try {
    return await fetch(`${t.url.replace(/\/$/, '')}${path}`, { headers, signal: AbortSignal.timeout(TIMEOUT_MS), redirect: 'follow' });
  } catch (e) {
    throw new ServerError('REGISTRY_UNREACHABLE', `registry ${t.url}: ${(e as Error).message}`, { cause: e });
  }
}

/** A successful response; a 404 too when `optional` (then undefined); any other status refused. */
async function get(t: RegistryTarget, path: string, accept?: string): Promise<Response>;
async function get(t: RegistryTarget, path: string, accept: string | undefined, optional: true): Promise<Response | undefined>;
async function get(t: RegistryTarget, path: string, accept?: string, optional = false): Promise<Response | undefined> {
  const res = await request(t, path, accept);
  if (res.ok) return res;
  await res.body?.cancel();
  if (optional && res.status === 404) return undefined;
  throw new ServerError('REGISTRY_UNREACHABLE', `registry ${t.url}: GET ${path} answered ${res.status}`);
}

async function boundedBytes(res: Response, max: number, what: string): Promise<Buffer> {
  const parts: Buffer[] = [];
  let n = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    n += chunk.length;
    if (n > max) throw new ServerError('REGISTRY_UNREACHABLE', `${what}: larger than ${max} bytes`);
    parts.push(Buffer.from(chunk));
  }
  return Buffer.concat(parts);
}

export async function listTags(t: RegistryTarget, repository: string): Promise<string[]> {
  const res = await get(t, `/v2/${repository}/tags/list`);
  const body = JSON.parse((await boundedBytes(res, SERVER_LIMITS.ociTagListBytes, 'tags list')).toString('utf8')) as { tags?: unknown };
  return Array.isArray(body.tags) ? body.tags.filter((x): x is string => typeof x === 'string').sort() : [];
}

/** The image manifest of a tag: bytes, digest (verified against Docker-Content-Digest when sent), parsed descriptors. */
export async function getManifest(
  t: RegistryTarget,
  repository: string,
  tag: string,
): Promise<{ bytes: Buffer; digest: string; mediaType: string; config: Descriptor; layers: Descriptor[] }> {
  const res = await get(t, `/v2/${repository}/manifests/${tag}`, `${OCI_MANIFEST}, ${DOCKER_MANIFEST}`);
  const bytes = await boundedBytes(res, SERVER_LIMITS.ociManifestBytes, 'manifest');
  const digest = sha256Digest(bytes);
  const claimed = res.headers.get('docker-content-digest');
  if (claimed && claimed !== digest) throw new ServerError('REGISTRY_UNREACHABLE', `manifest: registry claims ${claimed} but the bytes hash to ${digest}`);
  const m = JSON.parse(bytes.toString('utf8')) as { mediaType?: string; config?: unknown; layers?: unknown };
  const mediaType = m.mediaType ?? res.headers.get('content-type') ?? OCI_MANIFEST;
  if (mediaType !== OCI_MANIFEST && mediaType !== DOCKER_MANIFEST) {
    throw new ServerError('REGISTRY_INVALID', `tag: ${repository}:${tag} is a ${mediaType}, not a single image manifest`);
  }
  const desc = (d: unknown, at: string): Descriptor => {
    const o = d as Partial<Descriptor> | null;
    if (!o || !isDigest(o.digest) || !Number.isSafeInteger(o.size) || (o.size as number) < 0 || typeof o.mediaType !== 'string') {
      throw new ServerError('REGISTRY_UNREACHABLE', `manifest: ${at} is not a sha256 descriptor`);
    }
    return { mediaType: o.mediaType, digest: o.digest, size: o.size as number };
  };
  if (!Array.isArray(m.layers)) throw new ServerError('REGISTRY_UNREACHABLE', 'manifest: layers missing');
  return { bytes, digest, mediaType, config: desc(m.config, 'config'), layers: m.layers.map((l, i) => desc(l, `layers[${i}]`)) };
}

/** Streams one blob, refusing a size or digest other than the descriptor's. */
export async function* blobStream(t: RegistryTarget, repository: string, d: Descriptor): AsyncGenerator<Uint8Array> {
  const res = await get(t, `/v2/${repository}/blobs/${d.digest}`);
  const h = createHash('sha256');
  let n = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    n += chunk.length;
    if (n > d.size) throw new ServerError('REGISTRY_UNREACHABLE', `blob ${d.digest}: more than the ${d.size} bytes the manifest names`);
    h.update(chunk);
    yield chunk;
  }
  const got = digestFromHex(h.digest('hex'));
  if (n !== d.size || got !== d.digest) throw new ServerError('REGISTRY_UNREACHABLE', `blob ${d.digest}: received ${n} bytes hashing to ${got}`);
}

export const OCI_INDEX = 'application/vnd.oci.image.index.v1+json';

export interface Referrer {
  digest: string;
  artifactType: string;
}

/**
 * The referrers of a manifest (OCI distribution 1.1: `GET /v2/<name>/referrers/<digest>`),
 * or, where a registry has no referrers API, the referrers tag schema (an image index
 * tagged `sha256-<hex>`). Empty when neither exists.
 */
export async function listReferrers(t: RegistryTarget, repository: string, digest: string): Promise<Referrer[]> {
  const res =
    (await get(t, `/v2/${repository}/referrers/${digest}`, OCI_INDEX, true)) ??
    (await get(t, `/v2/${repository}/manifests/${digest.replace(':', '-')}`, OCI_INDEX, true));
  if (!res) return [];
  const index = JSON.parse((await boundedBytes(res, SERVER_LIMITS.ociManifestBytes, 'referrers index')).toString('utf8')) as { manifests?: unknown };
  if (!Array.isArray(index.manifests)) return [];
  return index.manifests
    .map((m) => m as { digest?: unknown; artifactType?: unknown })
    .filter((m): m is Referrer => isDigest(m.digest) && typeof m.artifactType === 'string');
}

/** The first layer of an artifact manifest whose media type is one of `mediaTypes`, its bytes verified and capped. */
export async function fetchArtifactLayer(
  t: RegistryTarget,
  repository: string,
  manifestDigest: string,
  mediaTypes: readonly string[],
  maxBytes: number,
): Promise<{ mediaType: string; bytes: Buffer } | undefined> {
  const res = await get(t, `/v2/${repository}/manifests/${manifestDigest}`, OCI_MANIFEST);
  const bytes = await boundedBytes(res, SERVER_LIMITS.ociManifestBytes, 'referrer manifest');
  if (sha256Digest(bytes) !== manifestDigest)
    throw new ServerError('REGISTRY_UNREACHABLE', `referrer ${manifestDigest}: the manifest bytes do not hash to their digest`);
  const m = JSON.parse(bytes.toString('utf8')) as { layers?: { mediaType?: unknown; digest?: unknown; size?: unknown }[] };
  const layer = (m.layers ?? []).find(
    (l) => typeof l.mediaType === 'string' && mediaTypes.includes(l.mediaType) && isDigest(l.digest) && Number.isSafeInteger(l.size),
  );
  if (!layer || (layer.size as number) > maxBytes) return undefined;
  const parts: Buffer[] = [];
  for await (const chunk of blobStream(t, repository, { mediaType: layer.mediaType as string, digest: layer.digest as string, size: layer.size as number }))
    parts.push(Buffer.from(chunk));
  return { mediaType: layer.mediaType as string, bytes: Buffer.concat(parts) };
}
