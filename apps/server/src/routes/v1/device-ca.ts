import { X509Certificate } from 'node:crypto';
import { encodePem, sha256Digest } from '@svc/release-core';
import { principalOf } from '../../auth/principal.js';
import { ServerError } from '../../errors/server-error.js';
import type { V1Routes } from '../../http/context.js';
import { ErrorResponses } from '../../http/schemas.js';
import { tenantDeviceCas } from '../../resources/device-ca/queries.js';
import { DeviceCa } from '../../resources/device-ca/schemas.js';

function certificateFacts(der: Uint8Array) {
  return {
    certificate_pem: encodePem(der, 'CERTIFICATE'),
    fingerprint: sha256Digest(der),
    not_after: new Date(new X509Certificate(der).validTo).toISOString(),
  };
}

/**
 * The tenant's device CA certificates (contracts §4), so an operator or integrator has an
 * independent source for `svc-release verify-receipt --ca`: the current CA, and the ones a
 * rotation retired (docs/device-channel.md "Device CA rotation"). The `.pem` form is all of
 * them, current first: a receipt signed under any of them verifies against it. Public
 * material, read-only; the CA is created at the tenant's first enrollment, so before that this
 * is a 404.
 */
export const deviceCaRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;
  const load = async (tenantId: string) => {
    const cas = await tenantDeviceCas(db, tenantId);
    const current = cas.find((ca) => ca.retiredAt === undefined);
    if (current === undefined) throw new ServerError('NOT_FOUND', 'device CA not found: the tenant has none until its first enrollment');
    return { current, cas };
  };

  app.get(
    '/device-ca',
    {
      config: { permission: 'devices.read', summary: 'The tenant device CA certificate, and the retired ones still kept for verification' },
      schema: { response: { 200: DeviceCa, ...ErrorResponses } },
    },
    async (request) => {
      const p = principalOf(request);
      const { current, cas } = await load(p.tenantId);
      return {
        tenant_id: p.tenantId,
        seq: current.seq,
        ...certificateFacts(current.certDer),
        retired: cas
          .filter((ca) => ca.retiredAt !== undefined)
          .map((ca) => ({
            seq: ca.seq,
            ...certificateFacts(ca.certDer),
            retired_at: ca.retiredAt!.toISOString(),
            trusted_until: ca.trustedUntil!.toISOString(),
          })),
      };
    },
  );

  app.get(
    '/device-ca.pem',
    {
      config: { permission: 'devices.read', summary: 'Every device CA certificate of the tenant as PEM, current first' },
    },
    async (request, reply) => {
      const { cas } = await load(principalOf(request).tenantId);
      return reply.type('application/x-pem-file').send(cas.map((ca) => encodePem(ca.certDer, 'CERTIFICATE')).join(''));
    },
  );
};
