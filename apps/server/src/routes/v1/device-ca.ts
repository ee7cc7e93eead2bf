import { X509Certificate } from 'node:crypto';
import { encodePem, sha256Digest } from '@svc/release-core';
import { Type } from 'typebox';
import { principalOf } from '../../auth/principal.js';
import { ServerError } from '../../errors/server-error.js';
import type { V1Routes } from '../../http/context.js';
import { ErrorResponses } from '../../http/schemas.js';
import { deviceCaCertificate } from '../../resources/device-ca/queries.js';

const DeviceCa = Type.Object({
  tenant_id: Type.String(),
  certificate_pem: Type.String(),
  fingerprint: Type.String(),
  not_after: Type.String(),
});

/**
 * The tenant's device CA certificate (contracts §4), so an operator or integrator has an
 * independent source for `svc-release verify-receipt --ca`. Public material, read-only; the
 * CA is created at the tenant's first enrollment, so before that this is a 404.
 */
export const deviceCaRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;
  const load = async (tenantId: string) => {
    const der = await deviceCaCertificate(db, tenantId);
    if (der === undefined) throw new ServerError('NOT_FOUND', 'device CA not found: the tenant has none until its first enrollment');
    return der;
  };

  app.get(
    '/device-ca',
    {
      config: { permission: 'devices.read', summary: 'The tenant device CA certificate' },
      schema: { response: { 200: DeviceCa, ...ErrorResponses } },
    },
    async (request) => {
      const p = principalOf(request);
      const der = await load(p.tenantId);
      return {
        tenant_id: p.tenantId,
        certificate_pem: encodePem(der, 'CERTIFICATE'),
        fingerprint: sha256Digest(der),
        not_after: new Date(new X509Certificate(der).validTo).toISOString(),
      };
    },
  );

  app.get(
    '/device-ca.pem',
    {
      config: { permission: 'devices.read', summary: 'The tenant device CA certificate as PEM' },
    },
    async (request, reply) => {
      const der = await load(principalOf(request).tenantId);
      return reply.type('application/x-pem-file').send(encodePem(der, 'CERTIFICATE'));
    },
  );
};
