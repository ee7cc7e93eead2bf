import type { sendUnaryData, ServerUnaryCall } from '@grpc/grpc-js';
import type { EnrollmentServiceServer, EnrollRequest, EnrollResponse } from '@svc/device-proto';
import { invalidInput } from '../errors/server-error.js';
import { usableEnrollToken } from '../resources/enroll-tokens/queries.js';
import type { DeviceChannelContext } from './context.js';
import { deviceScope } from './device-scope.js';
import { toServiceError } from './grpc-status.js';
import { assertDeviceName } from './identity.js';
import { issueDeviceCertificate } from './issue.js';
import { readCsr } from './device-cert.js';
import { readInventory } from './inventory.js';
import { SERVER_LIMITS } from '../limits.js';

/** Token checks being read, per database, by secret. */
const tokenChecks = new WeakMap<object, Map<string, Promise<{ tenantId: string }>>>();

/**
 * `usableEnrollToken`, one read shared by the Enroll calls that arrive while it is in flight
 * for the same token (a fleet enrolling with one token sends many at once): they get its
 * answer, read at most one round trip before they arrived. The check only saves a certificate
 * for a token that cannot be used; the use itself is spent, and checked again atomically, in
 * the unit of work.
 */
function checkToken(ctx: DeviceChannelContext, token: string, now: Date): Promise<{ tenantId: string }> {
  let pending = tokenChecks.get(ctx.db);
  if (!pending) {
    pending = new Map<string, Promise<{ tenantId: string }>>();
    tokenChecks.set(ctx.db, pending);
  }
  const inFlight = pending.get(token);
  if (inFlight) return inFlight;
  const check = usableEnrollToken(ctx.db, token, now).finally(() => pending.delete(token));
  pending.set(token, check);
  return check;
}

/**
 * Enroll: token + CSR -> certificate. The only call that runs without a client certificate.
 * The device made its P-256 key itself; the CSR's signature proves it holds it.
 */
export async function enroll(ctx: DeviceChannelContext, req: EnrollRequest): Promise<EnrollResponse> {
  if (req.token.length === 0) throw invalidInput('token', 'missing');
  if (req.token.length > SERVER_LIMITS.enrollTokenChars) throw invalidInput('token', `longer than ${SERVER_LIMITS.enrollTokenChars} characters`);
  // contracts §4: device names
  assertDeviceName(req.deviceName, 'device_name');
  const inventory = readInventory(req.inventory);
  const csr = readCsr(req.csrDer, 'csr_der');
  // contracts §4: subject CN = device name
  if (csr.commonName !== req.deviceName) {
    throw invalidInput('csr_der', `subject CN ${JSON.stringify(csr.commonName.slice(0, 80))} must equal device_name ${JSON.stringify(req.deviceName)}`);
  }
  const now = ctx.now();
  // Validation first, then the token: a malformed request never touches it, and a token that
  // cannot be used never makes a CA or a certificate. Its use is spent in the unit of work
  // that records the device, so a failure after this check costs no use.
  const { tenantId } = await checkToken(ctx, req.token, now);
  const cert = await issueDeviceCertificate(ctx, { tenantId, deviceName: req.deviceName, spki: csr.spki, now });
  // committed with the enrollments arriving meanwhile (enroll-batch.ts)
  await ctx.enrollments.submit(deviceScope(ctx, { tenantId, deviceName: req.deviceName }, now), {
    token: req.token,
    name: req.deviceName,
    profile: inventory.profile || null,
    agentVersion: inventory.agentVersion || null,
    attributes: inventory.attributes ?? null,
    certificate: cert,
  });
  // a re-enrolled device's older certificate stops working here at once, not when the
  // database's notification arrives (other processes hear that, migration 0042); the rest of
  // the fleet's remembered authentications stay
  ctx.credentials.forgetDevice(tenantId, req.deviceName);
  const ca = await ctx.cas.get(tenantId, now);
  return {
    tenantId,
    deviceName: req.deviceName,
    certificateDer: Buffer.from(cert.der),
    deviceCaDer: Buffer.from(ca.certDer),
    serverCaDer: Buffer.from(ctx.serverCaDer),
    notAfter: cert.notAfter,
    checkInIntervalS: ctx.checkInIntervalS,
  };
}

export function enrollmentService(ctx: DeviceChannelContext): EnrollmentServiceServer {
  return {
    enroll: (call: ServerUnaryCall<EnrollRequest, EnrollResponse>, callback: sendUnaryData<EnrollResponse>) => {
      enroll(ctx, call.request).then(
        (res) => callback(null, res),
        (err: unknown) => callback(toServiceError(err, ctx.log)),
      );
    },
  };
}
