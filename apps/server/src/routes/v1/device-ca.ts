import { createHash, X509Certificate } from 'node:crypto';
import { Type } from 'typebox';
import { principalOf } from '../../auth/principal.js';
import type { V1Routes } from '../../http/context.js';
import { ErrorResponses } from '../../http/schemas.js';
import { ServerError } from '../../errors/server-error.js';

const DeviceCa = Type.Object({
  tenant_id: Type.String(),
  certificate_pem: Type.String(),
  fingerprint: Type.String(),
  not_after: Type.String(),
});

function pemOf(der: Uint8Array): string {
  const b64 = Buffer.from(der).toString('base64').replace(/.{64}/g, '$&\n').replace(/\n$/, '');
  return `-----BEGIN CERTIFICATE-----\n${b64}\n-----END CERTIFICATE-----\n`;
}

/**
 * The tenant's device CA certificate (contracts 4), so an operator or integrator has an
 * independent source for `svc-release verify-receipt --ca`. Public material, read-only; the
 * CA is created at the tenant's first enrollment, so before that this is a 404.
 */
export const deviceCaRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;
  const load = async (tenantId: string) => {
    const row = await db.selectFrom('device_cas').select('cert_der').where('tenant_id', '=', tenantId).executeTakeFirst();
    if (row === undefined) throw new ServerError('NOT_FOUND', 'device CA not found: the tenant has none until its first enrollment');
    return new Uint8Array(row.cert_der);
  };

  app.get('/device-ca', {
    config: { permission: 'devices.read', summary: 'The tenant device CA certificate' },
    schema: { response: { 200: DeviceCa, ...ErrorResponses } },
  }, async (request) => {
    const p = principalOf(request);
    const der = await load(p.tenantId);
    return {
      tenant_id: p.tenantId,
      certificate_pem: pemOf(der),
      fingerprint: `sha256:${createHash('sha256').update(der).digest('hex')}`,
      not_after: new Date(new X509Certificate(der).validTo).toISOString(),
    };
  });

  app.get('/device-ca.pem', {
    config: { permission: 'devices.read', summary: 'The tenant device CA certificate as PEM' },
  }, async (request, reply) => {
    const der = await load(principalOf(request).tenantId);
    return reply.type('application/x-pem-file').send(pemOf(der));
  });
};
