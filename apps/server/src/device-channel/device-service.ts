import type { sendUnaryData, ServerReadableStream, ServerUnaryCall } from '@grpc/grpc-js';
import {
  LegacyStatus,
  type CheckInRequest,
  type CheckInResponse,
  type DeviceServiceServer,
  type RenewCertificateRequest,
  type RenewCertificateResponse,
  type ReportLegacyStatusRequest,
  type UploadLogBundleRequest,
  type UploadLogBundleResponse,
  type UploadReceiptRequest,
  type UploadReceiptResponse,
} from '@svc/device-proto';
import { sha256Digest, LIMITS, validateDeliveryReport, type DeliveryReport } from '@svc/release-core';
import { recordDelivery } from '../resources/deltas/deliveries.js';
import { checkInDevice, renewDeviceCertificate } from '../resources/devices/commands.js';
import { checkInState } from '../resources/devices/queries/presence.js';
import { storeLogBundle } from '../resources/log-requests/commands.js';
import { reportLegacyStatus } from '../resources/rollouts/commands.js';
import { runUnitOfWork } from '../resources/unit-of-work.js';
import { invalidInput, ServerError } from '../errors/server-error.js';
import { toProtoAssignment } from './assignments.js';
import type { DeviceChannelContext } from './context.js';
import { deviceScope } from './device-scope.js';
import { toServiceError } from './grpc-status.js';
import { readInventory } from './inventory.js';
import { issueDeviceCertificate } from './issue.js';
import { authenticatePeer, type DevicePeer } from './peer.js';
import { readCsr } from './device-cert.js';

/** A unary handler that first authenticates the device behind the connection. */
function unary<Req, Res>(ctx: DeviceChannelContext, handle: (peer: DevicePeer, req: Req, now: Date) => Promise<Res>) {
  return (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>): void => {
    const now = ctx.now();
    authenticatePeer(call, ctx.db, ctx.cas, ctx.credentials, now, ctx.connections)
      .then((peer) => handle(peer, call.request, now))
      .then(
        (res) => callback(null, res),
        (err: unknown) => callback(toServiceError(err, ctx.log)),
      );
  };
}

export async function checkIn(ctx: DeviceChannelContext, peer: DevicePeer, req: CheckInRequest, now: Date): Promise<CheckInResponse> {
  const inventory = readInventory(req.inventory);
  const agentVersion = inventory.agentVersion || undefined;
  const profile = inventory.profile || undefined;
  // the device's status and stored inventory, its log requests and the deployments it has work
  // in, read fresh in one statement: the authentication may have been answered from its cache,
  // which remembers only who the device is (credential-cache.ts)
  const device = await checkInState(ctx.db, peer.deviceId);
  if (device === undefined) throw new ServerError('PERMISSION_DENIED', `device ${peer.deviceName}: removed; enroll again`);
  if (device.status === 'decommissioned') throw new ServerError('PERMISSION_DENIED', `device ${peer.deviceName}: decommissioned`);
  // attributes come only when the agent saw them change (docs/inventory.md)
  const changes =
    inventory.attributes !== undefined ||
    (agentVersion !== undefined && agentVersion !== device.agent_version) ||
    (profile !== undefined && profile !== device.profile);
  let logRequests: { id: string; created_at: Date }[] = device.logRequests;
  if (changes || device.logRequests.some((r) => r.pending)) {
    // an inventory change, or log requests to hand over: written at once, together
    logRequests = await runUnitOfWork(ctx.db, deviceScope(ctx, peer, now), (uow) =>
      checkInDevice(uow, {
        deviceId: peer.deviceId,
        inventory: {
          ...(agentVersion ? { agentVersion } : {}),
          ...(profile ? { profile } : {}),
          ...(inventory.attributes ? { attributes: inventory.attributes } : {}),
        },
      }),
    );
  } else {
    // last_seen (and online again, when it was not): coalesced with other heartbeats (last-seen.ts)
    ctx.lastSeen.seen(peer.deviceId, now, device.status !== 'online');
  }
  // what to install: the same for every device of a deployment, read once per deployment (assignment-pointers.ts)
  const assignments = await ctx.assignments.assignmentsOf(ctx.db, device.deploymentIds);
  return {
    assignments: assignments.map(toProtoAssignment),
    logRequests: logRequests.map((r) => ({ id: r.id, requestedAt: r.created_at })),
    renewCertificate: peer.certNotAfter.getTime() - now.getTime() < ctx.renewBeforeDays * 86_400_000,
    certificateNotAfter: peer.certNotAfter,
    checkInIntervalS: ctx.checkInIntervalS,
    serverTime: now,
  };
}

async function renew(ctx: DeviceChannelContext, peer: DevicePeer, req: RenewCertificateRequest, now: Date): Promise<RenewCertificateResponse> {
  const csr = readCsr(req.csrDer, 'csr_der');
  // contracts §4: a device can only renew its own name
  if (csr.commonName !== peer.deviceName) {
    throw invalidInput('csr_der', `subject CN must be this device's name ${JSON.stringify(peer.deviceName)}`);
  }
  // the device's current certificate stays current until the new one is first used (peer.ts)
  const cert = await issueDeviceCertificate(ctx, { tenantId: peer.tenantId, deviceName: peer.deviceName, spki: csr.spki, now });
  await runUnitOfWork(ctx.db, deviceScope(ctx, peer, now), (uow) => renewDeviceCertificate(uow, { name: peer.deviceName, certificate: cert }));
  return { certificateDer: Buffer.from(cert.der), notAfter: cert.notAfter };
}

async function uploadReceipt(ctx: DeviceChannelContext, peer: DevicePeer, req: UploadReceiptRequest, now: Date): Promise<UploadReceiptResponse> {
  if (req.envelope.length === 0) throw invalidInput('envelope', 'missing');
  // bound untrusted documents before parsing
  if (req.envelope.length > LIMITS.receiptEnvelopeBytes) throw new ServerError('BODY_TOO_LARGE', `envelope: larger than ${LIMITS.receiptEnvelopeBytes} bytes`);
  const delivery = readDeliveryReport(req.deliveryReport);
  // spec §2.3 rule 5: the embedded certificate must be the one on this mTLS connection
  const r = await ctx.receipts.accept(peer, new Uint8Array(req.envelope), now);
  if (delivery !== undefined) await recordDelivery(ctx.db, { tenant: peer.tenantId, receiptId: r.receipt_id, report: delivery, now });
  return { receiptId: r.receipt_id, duplicate: r.duplicate };
}

/** The optional delivery report beside a receipt (docs/delta-updates.md): bounded, then parsed, then validated. */
function readDeliveryReport(bytes: Buffer | undefined): DeliveryReport | undefined {
  if (bytes === undefined || bytes.length === 0) return undefined;
  if (bytes.length > LIMITS.deliveryReportBytes) throw new ServerError('BODY_TOO_LARGE', `delivery_report: larger than ${LIMITS.deliveryReportBytes} bytes`);
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw invalidInput('delivery_report', 'not JSON');
  }
  return validateDeliveryReport(value);
}

async function reportLegacy(ctx: DeviceChannelContext, peer: DevicePeer, req: ReportLegacyStatusRequest, now: Date): Promise<object> {
  if (req.rolloutId.length === 0 || req.rolloutId.length > 64) throw invalidInput('rollout_id', 'missing or too long');
  const status = req.status === LegacyStatus.LEGACY_STATUS_INSTALLED ? 'installed' : req.status === LegacyStatus.LEGACY_STATUS_FAILED ? 'failed' : undefined;
  if (status === undefined) throw invalidInput('status', 'must be LEGACY_STATUS_INSTALLED or LEGACY_STATUS_FAILED');
  // spec §2.3 rule 6: device-reported, labelled legacy; never upgraded by the authenticated transport
  await runUnitOfWork(ctx.db, deviceScope(ctx, peer, now), (uow) =>
    reportLegacyStatus(uow, { deviceName: peer.deviceName, rolloutId: req.rolloutId, status, ...(req.detail ? { detail: req.detail } : {}) }),
  );
  return {};
}

/** Client stream: one header naming the log request, then chunks up to LIMITS.logBundleBytes. */
async function uploadLogBundle(
  ctx: DeviceChannelContext,
  call: ServerReadableStream<UploadLogBundleRequest, UploadLogBundleResponse>,
): Promise<UploadLogBundleResponse> {
  const now = ctx.now();
  const peer = await authenticatePeer(call, ctx.db, ctx.cas, ctx.credentials, now, ctx.connections);
  let header: { logRequestId: string; contentType: string } | undefined;
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const msg of call as AsyncIterable<UploadLogBundleRequest>) {
    if (header === undefined) {
      if (msg.header === undefined) throw invalidInput('header', 'the first message must be the header');
      header = msg.header;
      continue;
    }
    if (msg.chunk === undefined) throw invalidInput('chunk', 'only the first message may be a header');
    length += msg.chunk.length;
    if (length > LIMITS.logBundleBytes) throw new ServerError('BODY_TOO_LARGE', `log bundle: larger than ${LIMITS.logBundleBytes} bytes`);
    chunks.push(msg.chunk);
  }
  if (header === undefined) throw invalidInput('header', 'missing');
  const contentType = header.contentType || 'application/octet-stream';
  if (contentType.length > 128) throw invalidInput('header.content_type', 'longer than 128 characters');
  const content = Buffer.concat(chunks);
  const logRequestId = header.logRequestId;
  await runUnitOfWork(ctx.db, deviceScope(ctx, peer, now), (uow) => storeLogBundle(uow, { deviceId: peer.deviceId, logRequestId, content, contentType }));
  return { length, digest: sha256Digest(content) };
}

export function deviceService(ctx: DeviceChannelContext): DeviceServiceServer {
  return {
    checkIn: unary(ctx, (peer, req: CheckInRequest, now) => checkIn(ctx, peer, req, now)),
    renewCertificate: unary(ctx, (peer, req: RenewCertificateRequest, now) => renew(ctx, peer, req, now)),
    uploadReceipt: unary(ctx, (peer, req: UploadReceiptRequest, now) => uploadReceipt(ctx, peer, req, now)),
    reportLegacyStatus: unary(ctx, (peer, req: ReportLegacyStatusRequest, now) => reportLegacy(ctx, peer, req, now)),
    ping: unary(ctx, async (_peer, _req: object, now) => ({ serverTime: now })),
    uploadLogBundle: (call, callback) => {
      uploadLogBundle(ctx, call).then(
        (res) => callback(null, res),
        (err: unknown) => callback(toServiceError(err, ctx.log)),
      );
    },
  };
}
