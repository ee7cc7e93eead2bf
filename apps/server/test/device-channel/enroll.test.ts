import 'reflect-metadata';
import { status } from '@grpc/grpc-js';
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { connect as connectTls, type TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodePem } from '@svc/release-core';
import { hashSecret } from '../../src/auth/secrets.js';
import { insertLogRequest } from '../../src/resources/log-requests/queries.js';
import { issueCertificate } from '../../src/device-channel/pki.js';
import { DEVICE_CHANNEL_TLS_NAME } from '../../src/device-channel/server-tls.js';
import { createTenant } from '../../src/resources/tenants/queries.js';
import { availableDrivers } from '../helpers/store.js';
import { channelCredentials, clientsFor, csrFor, newDeviceKey, refusal, startChannelFixture, unary, type ChannelFixture } from '../fixtures/device-channel.js';

describe.each(availableDrivers())('device channel enrollment and mTLS on %s', (driver) => {
  let f: ChannelFixture;
  beforeAll(async () => {
    f = await startChannelFixture(driver);
  });
  afterAll(async () => {
    await f?.dispose();
  });

  async function enrollNamed(name: string, opts: { token?: string } = {}) {
    const key = await newDeviceKey();
    const token = opts.token ?? (await f.newToken());
    const anon = clientsFor(f.addr, channelCredentials(f.serverCaPem));
    try {
      const csrDer = await csrFor(key, name);
      const ok = await unary<import('@svc/device-proto').EnrollResponse>((cb) =>
        anon.enrollment.enroll(
          { token, deviceName: name, csrDer, inventory: { agentVersion: '0.1.0', profile: 'linux-arm64', product: 'x', slots: [], attributes: undefined } },
          cb,
        ),
      );
      return { key, res: ok, certPem: encodePem(ok.certificateDer, 'CERTIFICATE') };
    } finally {
      anon.close();
    }
  }

  it('enrolls with a valid token: certificate names the device, device row online', async () => {
    const { res } = await enrollNamed('dev-1');
    expect(res.tenantId).toBe(f.tenantId);
    const cert = new x509.X509Certificate(res.certificateDer);
    expect(cert.subjectName.getField('CN')).toEqual(['dev-1']);
    const san = cert.getExtension(x509.SubjectAlternativeNameExtension);
    expect(san?.names.items.map((n) => `${n.type}:${n.value}`)).toEqual([`url:spiffe://${f.tenantId}/device/dev-1`]);
    expect(cert.getExtension(x509.ExtendedKeyUsageExtension)?.usages).toEqual([x509.ExtendedKeyUsage.clientAuth]);
    const ca = new x509.X509Certificate(res.deviceCaDer);
    expect(await cert.verify({ publicKey: ca.publicKey, signatureOnly: true })).toBe(true);
    expect(cert.notAfter.getTime() - Date.now()).toBeLessThanOrEqual(30 * 86_400_000 + 60_000);
    const row = await f.t.store.db.selectFrom('devices').selectAll().where('name', '=', 'dev-1').executeTakeFirstOrThrow();
    expect(row.status).toBe('online');
    expect(row.profile).toBe('linux-arm64');
    const audit = await f.t.store.db.selectFrom('audit_events').select(['action', 'actor', 'credential']).where('target', '=', 'device:dev-1').execute();
    expect(audit).toEqual([{ action: 'device.enroll', actor: 'device:dev-1', credential: 'device' }]);
    const caRow = await f.t.store.db.selectFrom('device_cas').select('cert_der').where('tenant_id', '=', f.tenantId).executeTakeFirstOrThrow();
    expect(Buffer.from(caRow.cert_der).equals(Buffer.from(res.deviceCaDer))).toBe(true);
  });

  it('refuses a used-up token and an expired token', async () => {
    const token = await f.newToken({ maxUses: 1 });
    await enrollNamed('dev-used-1', { token });
    const used = await refusal(enrollNamed('dev-used-2', { token }));
    expect(used.code).toBe(status.UNAUTHENTICATED);
    expect(used.svcCode).toBe('ENROLL_TOKEN_EXHAUSTED');
    const expired = await f.newToken({ expiresAt: new Date(Date.now() - 1000) });
    const exp = await refusal(enrollNamed('dev-exp', { token: expired }));
    expect(exp.code).toBe(status.UNAUTHENTICATED);
    expect(exp.svcCode).toBe('ENROLL_TOKEN_EXPIRED');
    expect(exp.details).toBe('enrollment token: expired');
    expect(await f.t.store.db.selectFrom('devices').select('id').where('name', 'in', ['dev-used-2', 'dev-exp']).execute()).toEqual([]);
  });

  it('refuses a CSR whose CN is not the device name, a P-384 key, and garbage; no token use burnt', async () => {
    const token = await f.newToken({ maxUses: 1 });
    const anon = clientsFor(f.addr, channelCredentials(f.serverCaPem));
    try {
      const key = await newDeviceKey();
      const wrongCn = await refusal(unary((cb) => anon.enrollment.enroll({ token, deviceName: 'dev-a', csrDer: Buffer.alloc(0), inventory: undefined }, cb)));
      expect(wrongCn.details).toMatch(/^csr_der: missing/);
      const cnMismatch = await refusal(
        unary(async (cb) => anon.enrollment.enroll({ token, deviceName: 'dev-a', csrDer: await csrFor(key, 'dev-b'), inventory: undefined }, cb)),
      );
      expect(cnMismatch.code).toBe(status.INVALID_ARGUMENT);
      expect(cnMismatch.details).toMatch(/^csr_der: subject CN "dev-b" must equal device_name "dev-a"/);
      const p384 = await newDeviceKey('p384');
      const wrongKey = await refusal(
        unary(async (cb) => anon.enrollment.enroll({ token, deviceName: 'dev-a', csrDer: await csrFor(p384, 'dev-a'), inventory: undefined }, cb)),
      );
      expect(wrongKey.code).toBe(status.INVALID_ARGUMENT);
      expect(wrongKey.details).toMatch(/^csr_der: key must be ECDSA P-256/);
      const garbage = await refusal(
        unary((cb) => anon.enrollment.enroll({ token, deviceName: 'dev-a', csrDer: Buffer.from('not a csr'), inventory: undefined }, cb)),
      );
      expect(garbage.details).toMatch(/^csr_der: not a DER PKCS#10/);
      const badName = await refusal(
        unary(async (cb) => anon.enrollment.enroll({ token, deviceName: 'Dev A', csrDer: await csrFor(key, 'Dev A'), inventory: undefined }, cb)),
      );
      expect(badName.details).toMatch(/^device_name: must match/);
    } finally {
      anon.close();
    }
    // the token was never consumed by the refused requests
    const row = await f.t.store.db.selectFrom('enroll_tokens').select('uses').where('secret_hash', '=', hashSecret(token)).executeTakeFirstOrThrow();
    expect(row.uses).toBe(0);
  });

  it('resumes no TLS session: a device that offers the session of its last connection gets a full handshake', async () => {
    const { key, certPem } = await enrollNamed('dev-no-resume');
    const host = f.addr.split(':')[0];
    const port = Number(f.addr.split(':')[1]);
    const open = (session?: Buffer) =>
      new Promise<{ socket: TLSSocket; offered: Promise<Buffer> }>((resolve, reject) => {
        const socket = connectTls({
          host,
          port,
          ca: f.serverCaPem,
          key: key.keyPem,
          cert: certPem,
          servername: DEVICE_CHANNEL_TLS_NAME,
          ALPNProtocols: ['h2'],
          session,
        });
        // the session (and ticket) the server hands out after the handshake, for a later resumption
        const offered = new Promise<Buffer>((r) => socket.once('session', r));
        socket.once('secureConnect', () => resolve({ socket, offered }));
        socket.once('error', reject);
      });
    const first = await open();
    const saved = await first.offered;
    expect(first.socket.getProtocol()).toBe('TLSv1.3');
    expect(first.socket.authorized).toBe(true);
    first.socket.destroy();
    const second = await open(saved);
    try {
      expect(second.socket.isSessionReused()).toBe(false);
      expect(second.socket.authorized).toBe(true);
    } finally {
      second.socket.destroy();
    }
  });

  it('refuses device calls without a client certificate and with a foreign-CA certificate', async () => {
    const anon = clientsFor(f.addr, channelCredentials(f.serverCaPem));
    try {
      const r = await refusal(unary((cb) => anon.device.ping({}, cb)));
      expect(r.code).toBe(status.UNAUTHENTICATED);
      expect(r.details).toMatch(/^client certificate: missing, expired, or not issued by a device CA/);
    } finally {
      anon.close();
    }
    // a self-made CA issuing a certificate with the right names: refused
    const key = await newDeviceKey();
    const caKeys = await newDeviceKey();
    const foreignCa = await x509.X509CertificateGenerator.createSelfSigned({
      name: 'CN=evil',
      keys: caKeys.keys as never,
      signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
      extensions: [new x509.BasicConstraintsExtension(true, 0, true)],
    });
    const leaf = await x509.X509CertificateGenerator.create({
      subject: 'CN=dev-1',
      issuer: foreignCa.subject,
      publicKey: key.keys.publicKey as never,
      signingKey: caKeys.keys.privateKey as never,
      signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
      extensions: [
        new x509.SubjectAlternativeNameExtension([{ type: 'url', value: `spiffe://${f.tenantId}/device/dev-1` }]),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth]),
      ],
    });
    const forged = clientsFor(f.addr, channelCredentials(f.serverCaPem, { keyPem: key.keyPem, certPem: leaf.toString('pem') }));
    try {
      const r = await refusal(unary((cb) => forged.device.checkIn({ inventory: undefined }, cb)));
      expect(r.code).toBe(status.UNAUTHENTICATED);
      expect(r.details).toMatch(/^client certificate: missing, expired, or not issued by a device CA/);
    } finally {
      forged.close();
    }
  });

  it("refuses a certificate from another tenant's device CA that names this tenant (TLS trusts it, the tenant binding does not)", async () => {
    await enrollNamed('dev-x');
    const other = await createTenant(f.t.store.db, 'other');
    const caB = await f.ctx.cas.get(other, new Date());
    const key = await newDeviceKey();
    const der = await issueCertificate(caB, {
      subjectCN: 'dev-x',
      publicKey: await x509.PublicKey.create(key.keys.publicKey),
      usage: 'clientAuth',
      sanUris: [`spiffe://${f.tenantId}/device/dev-x`],
      notBefore: new Date(Date.now() - 60_000),
      notAfter: new Date(Date.now() + 86_400_000),
    });
    const c = clientsFor(f.addr, channelCredentials(f.serverCaPem, { keyPem: key.keyPem, certPem: encodePem(der, 'CERTIFICATE') }));
    try {
      const r = await refusal(unary((cb) => c.device.ping({}, cb)));
      expect(r.code).toBe(status.UNAUTHENTICATED);
      expect(r.details).toBe('client certificate: not issued by the tenant device CA');
    } finally {
      c.close();
    }
  });

  it("refuses a certificate of the tenant's own CA that breaks the identity rules or lacks clientAuth", async () => {
    await enrollNamed('dev-y');
    const ca = await f.ctx.cas.get(f.tenantId, new Date());
    const cases = [
      // CN and SAN name different devices
      {
        subjectCN: 'dev-y',
        sanUris: [`spiffe://${f.tenantId}/device/dev-z`],
        usage: 'clientAuth' as const,
        why: /^client certificate: needs subject CN=<device>/,
      },
      // two SAN URIs
      {
        subjectCN: 'dev-y',
        sanUris: [`spiffe://${f.tenantId}/device/dev-y`, `spiffe://${f.tenantId}/device/dev-y2`],
        usage: 'clientAuth' as const,
        why: /^client certificate: needs subject CN=<device>/,
      },
      // a server certificate: TLS or the handler refuses it
      {
        subjectCN: 'dev-y',
        sanUris: [`spiffe://${f.tenantId}/device/dev-y`],
        usage: 'serverAuth' as const,
        why: /^client certificate: (lacks the clientAuth|missing, expired)/,
      },
    ];
    for (const c of cases) {
      const key = await newDeviceKey();
      const der = await issueCertificate(ca, {
        subjectCN: c.subjectCN,
        publicKey: await x509.PublicKey.create(key.keys.publicKey),
        usage: c.usage,
        sanUris: c.sanUris,
        notBefore: new Date(Date.now() - 60_000),
        notAfter: new Date(Date.now() + 86_400_000),
      });
      const client = clientsFor(f.addr, channelCredentials(f.serverCaPem, { keyPem: key.keyPem, certPem: encodePem(der, 'CERTIFICATE') }));
      try {
        const r = await refusal(unary((cb) => client.device.ping({}, cb)));
        expect(r.code).toBe(status.UNAUTHENTICATED);
        expect(r.details).toMatch(c.why);
      } finally {
        client.close();
      }
    }
  });

  it('check-in marks the device online; a decommissioned device is refused on its next call', async () => {
    const d = await enrollNamed('dev-dc');
    const c = clientsFor(f.addr, channelCredentials(f.serverCaPem, { keyPem: d.key.keyPem, certPem: d.certPem }));
    try {
      await f.t.store.db.updateTable('devices').set({ status: 'offline' }).where('name', '=', 'dev-dc').execute();
      const res = await unary<import('@svc/device-proto').CheckInResponse>((cb) =>
        c.device.checkIn({ inventory: { agentVersion: '0.2.0', profile: 'linux-amd64', product: 'x', slots: [], attributes: undefined } }, cb),
      );
      expect(res.assignments).toEqual([]);
      expect(res.checkInIntervalS).toBe(60);
      expect(res.renewCertificate).toBe(false);
      const row = await f.t.store.db.selectFrom('devices').selectAll().where('name', '=', 'dev-dc').executeTakeFirstOrThrow();
      expect(row.status).toBe('online');
      expect(row.agent_version).toBe('0.2.0');
      await f.t.store.db.updateTable('devices').set({ status: 'decommissioned' }).where('name', '=', 'dev-dc').execute();
      const r = await refusal(unary((cb) => c.device.checkIn({ inventory: undefined }, cb)));
      expect(r.code).toBe(status.PERMISSION_DENIED);
      expect(r.details).toBe('device dev-dc: decommissioned');
    } finally {
      c.close();
    }
  });

  it('renewal issues a new certificate; it becomes current at its first use and the old one stops working then', async () => {
    const d = await enrollNamed('dev-renew');
    const c = clientsFor(f.addr, channelCredentials(f.serverCaPem, { keyPem: d.key.keyPem, certPem: d.certPem }));
    const fingerprint = async () =>
      (await f.t.store.db.selectFrom('devices').select('cert_fingerprint').where('name', '=', 'dev-renew').executeTakeFirstOrThrow()).cert_fingerprint;
    const before = await fingerprint();
    const pems: string[] = [];
    try {
      const wrong = await refusal(unary(async (cb) => c.device.renewCertificate({ csrDer: await csrFor(d.key, 'someone-else') }, cb)));
      expect(wrong.details).toMatch(/^csr_der: subject CN must be this device's name/);
      // two renewals whose answers the device never stored (a crash): the old certificate still works
      for (let i = 0; i < 2; i++) {
        const res = await unary<import('@svc/device-proto').RenewCertificateResponse>(async (cb) =>
          c.device.renewCertificate({ csrDer: await csrFor(d.key, 'dev-renew') }, cb),
        );
        pems.push(encodePem(res.certificateDer, 'CERTIFICATE'));
        const pong = await unary<{ serverTime?: Date }>((cb) => c.device.ping({}, cb));
        expect(pong.serverTime).toBeInstanceOf(Date);
        expect(await fingerprint()).toBe(before);
      }
    } finally {
      c.close();
    }
    // the first renewal was superseded by the second
    const first = clientsFor(f.addr, channelCredentials(f.serverCaPem, { keyPem: d.key.keyPem, certPem: pems[0]! }));
    try {
      const r = await refusal(unary((cb) => first.device.ping({}, cb)));
      expect(r.details).toBe('device dev-renew: certificate revoked or superseded');
    } finally {
      first.close();
    }
    const c2 = clientsFor(f.addr, channelCredentials(f.serverCaPem, { keyPem: d.key.keyPem, certPem: pems[1]! }));
    try {
      const pong = await unary<{ serverTime?: Date }>((cb) => c2.device.ping({}, cb));
      expect(pong.serverTime).toBeInstanceOf(Date);
      expect(await fingerprint()).not.toBe(before);
    } finally {
      c2.close();
    }
    // the certificate it replaced stops working at that first use
    const old = clientsFor(f.addr, channelCredentials(f.serverCaPem, { keyPem: d.key.keyPem, certPem: d.certPem }));
    try {
      const r = await refusal(unary((cb) => old.device.ping({}, cb)));
      expect(r.details).toBe('device dev-renew: certificate revoked or superseded');
    } finally {
      old.close();
    }
    const issued = await f.t.store.db.selectFrom('device_certificates').select('reason').where('device_name', '=', 'dev-renew').orderBy('issued_at').execute();
    expect(issued.map((r) => r.reason)).toEqual(['enroll', 'renew', 'renew']);
  });

  it('delivers a log request on check-in and stores the uploaded bundle; unknown request ids are NOT_FOUND', async () => {
    const d = await enrollNamed('dev-logs');
    const db = f.t.store.db;
    const dev = await db.selectFrom('devices').select('id').where('name', '=', 'dev-logs').executeTakeFirstOrThrow();
    const req = await insertLogRequest(db, f.tenantId, dev.id, 'admin@example.com');
    const c = clientsFor(f.addr, channelCredentials(f.serverCaPem, { keyPem: d.key.keyPem, certPem: d.certPem }));
    const upload = (id: string, bytes: Buffer) =>
      new Promise<{ length: number; digest: string }>((resolve, reject) => {
        const s = c.device.uploadLogBundle((err, res) => (err ? reject(err) : resolve(res)));
        s.write({ header: { logRequestId: id, contentType: 'application/gzip' } });
        for (let at = 0; at < bytes.length; at += 1000) s.write({ chunk: bytes.subarray(at, at + 1000) });
        s.end();
      });
    try {
      const res = await unary<import('@svc/device-proto').CheckInResponse>((cb) => c.device.checkIn({ inventory: undefined }, cb));
      expect(res.logRequests.map((r) => r.id)).toEqual([req.id]);
      const bundle = Buffer.alloc(2500, 7);
      const up = await upload(req.id, bundle);
      expect(up.length).toBe(2500);
      const row = await db.selectFrom('log_requests').selectAll().where('id', '=', req.id).executeTakeFirstOrThrow();
      expect(row.status).toBe('uploaded');
      expect(Buffer.from(row.content!).equals(bundle)).toBe(true);
      expect(row.content_type).toBe('application/gzip');
      const again = await unary<import('@svc/device-proto').CheckInResponse>((cb) => c.device.checkIn({ inventory: undefined }, cb));
      expect(again.logRequests).toEqual([]);
      const r = await refusal(upload('00000000-0000-4000-8000-000000000000', Buffer.from('x')));
      expect(r.code).toBe(status.NOT_FOUND);
      const actions = await db.selectFrom('audit_events').select('action').where('actor', '=', 'device:dev-logs').execute();
      expect(actions.map((x) => x.action).sort()).toEqual(['device.enroll', 'device.log-bundle.upload']);
    } finally {
      c.close();
    }
  });
});
