import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { hashedTargetPath } from '@svc/release-core';
import { isBlobError, parseRangeHeader, type ByteRangeRequest } from '../blobs/index.js';
import { toHttpError } from '../errors/handler.js';
import { SERVER_LIMITS, SERVER_TUNING } from '../limits.js';
import { addBundleBytes, bundleBytesSent, streamableBundle, type StreamableBundle } from '../resources/deltas/queries.js';
import type { DeviceChannelContext } from './context.js';
import { deviceTlsContext } from './credentials.js';
import { authenticatePeer, type DevicePeer } from './peer.js';
import type { RepoFile } from './ports.js';
import type { ServerTls } from './server-tls.js';

/** `GET|HEAD /v1/rollouts/<rollout id>/bundle.raucb`, and the count of what was sent: `/bundle-bytes`. */
const ROUTE = /^\/v1\/rollouts\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\/(bundle\.raucb|bundle-bytes)$/;

export interface BundleServer {
  readonly port: number;
  /** Replaces the trusted device CAs (new connections only), as the channel port does. */
  setDeviceCas(deviceCaDers: readonly Uint8Array[]): void;
  close(): Promise<void>;
}

/**
 * The bundle port (SVC_DEVICE_BUNDLE_ADDR): os-bundle members over HTTPS with byte ranges, for
 * RAUC's streaming client (libcurl, HTTP/1.1 over TLS; `[streaming] tls-cert / tls-key /
 * tls-ca` in RAUC's system.conf). A second TLS port beside the gRPC device port, because
 * grpc-js binds its own HTTP/2 server and offers no way to hand plain requests to another
 * handler. The trust is the device port's: the server TLS leaf devices pinned at enrollment,
 * every tenant's device CAs in the trust store (replaced with the channel's), and every
 * request authenticated as on the channel (peer.ts: the tenant's CA, validity, the device's
 * CURRENT certificate, not decommissioned). Unlike the device port, a client certificate is
 * required in the handshake: nothing here works without one.
 *
 * A device may fetch only the bundle of a rollout assigned to it now (`streamableBundle`);
 * every other request, another tenant's rollout included, is a 404 that says nothing more.
 * Each response's bytes are added to the device's count for the rollout (`bundle_streams`),
 * which the device reads back for its delivery report and the operator sees in the rollout's
 * delivery view (docs/delta-updates.md).
 */
export async function startBundleServer(ctx: DeviceChannelContext, tls: ServerTls, addr: { host: string; port: number }): Promise<BundleServer> {
  const initial = await ctx.cas.allCertificates(ctx.now());
  const server: Server = createServer(
    {
      ...deviceTlsContext(tls, initial),
      requestCert: true,
      rejectUnauthorized: true,
      maxHeaderSize: SERVER_LIMITS.bundleHeaderBytes,
      requestTimeout: SERVER_TUNING.bundleIdleMs,
      headersTimeout: SERVER_TUNING.bundleIdleMs,
    },
    (req, res) => {
      handle(ctx, req, res).catch((err: unknown) => {
        const { status, body } = toHttpError(err);
        if (status >= 500) ctx.log.error({ err }, 'bundle port request failed');
        if (res.headersSent) {
          res.destroy();
          return;
        }
        send(res, status, body);
      });
    },
  );
  server.maxConnections = SERVER_TUNING.bundleConnections;
  server.keepAliveTimeout = 5_000;
  server.setTimeout(SERVER_TUNING.bundleIdleMs, (socket) => socket.destroy());
  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(addr.port, addr.host, () => resolve((server.address() as { port: number }).port));
  });
  return {
    port,
    setDeviceCas: (ders) => server.setSecureContext(deviceTlsContext(tls, ders)),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), ...headers });
  res.end(text);
}

async function handle(ctx: DeviceChannelContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const socket = req.socket as TLSSocket;
  const peer = await authenticatePeer(
    {
      getPeer: () => `${socket.remoteAddress ?? ''}:${socket.remotePort ?? 0}`,
      getAuthContext: () => ({ sslPeerCertificate: { raw: socket.getPeerX509Certificate()?.raw } }),
    },
    ctx.db,
    ctx.cas,
    ctx.credentials,
    ctx.now(),
  );
  const m = ROUTE.exec(req.url ?? '');
  if (m === null) return send(res, 404, { error: 'not found' });
  if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, { error: `method ${req.method ?? ''} not allowed` }, { allow: 'GET, HEAD' });
  const rolloutId = m[1]!;
  const bundle = await streamableBundle(ctx.db, peer.tenantId, peer.deviceName, rolloutId);
  if (bundle === undefined) return send(res, 404, { error: `not found: rollout ${rolloutId} has no os-bundle assigned to this device` });
  if (m[2] === 'bundle-bytes') {
    return send(res, 200, { bytes_sent: await bundleBytesSent(ctx.db, peer.tenantId, peer.deviceName, rolloutId), full_length: bundle.length });
  }
  await serveBundle(ctx, peer, rolloutId, bundle, req, res);
}

async function serveBundle(
  ctx: DeviceChannelContext,
  peer: DevicePeer,
  rolloutId: string,
  bundle: StreamableBundle,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const path = `targets/${hashedTargetPath(bundle.target, bundle.digest.slice('sha256:'.length))}`;
  let range: ByteRangeRequest | undefined;
  let file: RepoFile;
  try {
    range = parseRangeHeader(req.headers.range);
    // a range is resolved against the bundle's signed length; the repository resolves it again against the stored bytes
    file = await ctx.repository.openRepoFile(peer.tenantId, path, range);
  } catch (e) {
    if (isBlobError(e, 'BLOB_RANGE_INVALID')) {
      return send(res, 416, { error: `range: ${e.message}` }, { 'content-range': `bytes */${bundle.length}` });
    }
    throw e;
  }
  const start = range === undefined ? 0 : range.kind === 'suffix' ? file.totalLength - file.length : range.start;
  const headers: Record<string, string> = {
    'content-type': 'application/vnd.rauc.bundle',
    'content-length': String(file.length),
    'accept-ranges': 'bytes',
    etag: `"${bundle.digest}"`,
    'cache-control': 'private, no-transform',
  };
  if (range !== undefined) headers['content-range'] = `bytes ${start}-${start + file.length - 1}/${file.totalLength}`;
  res.writeHead(range === undefined ? 200 : 206, headers);
  if (req.method === 'HEAD') {
    closeStream(file);
    res.end();
    return;
  }
  // every byte handed to the socket counts, also when the device hangs up half way (the count
  // is written before a piece is handed over, at least every bundleCountEveryBytes)
  let pending = 0;
  let first = true;
  const flush = async (): Promise<void> => {
    if (pending === 0 && !first) return;
    const bytes = pending;
    pending = 0;
    await addBundleBytes(ctx.db, {
      tenant: peer.tenantId,
      deploymentId: bundle.deployment_id,
      rolloutId,
      device: peer.deviceName,
      bytes,
      request: first ? (range === undefined ? 'whole' : 'range') : 'continued',
      now: ctx.now(),
    });
    first = false;
  };
  try {
    let handed = 0;
    for await (const piece of file.stream) {
      if (res.destroyed) break;
      pending += piece.length;
      handed += piece.length;
      // counted before the last piece leaves: a device that has every byte finds them counted
      if (handed >= file.length || pending >= SERVER_TUNING.bundleCountEveryBytes) await flush();
      if (!res.write(piece)) {
        await new Promise<void>((resolve) => {
          const done = () => {
            res.off('drain', done);
            res.off('close', done);
            resolve();
          };
          res.on('drain', done);
          res.on('close', done);
        });
      }
    }
    res.end();
  } finally {
    closeStream(file);
    await flush();
  }
}

function closeStream(file: RepoFile): void {
  const s = file.stream as { destroy?: () => void };
  s.destroy?.();
}
