import 'reflect-metadata';
import { status } from '@grpc/grpc-js';
import type { CheckInResponse, EnrollResponse, RenewCertificateResponse } from '@svc/device-proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodePem } from '@svc/release-core';
import { hashSecret } from '../../src/auth/secrets.js';
import { insertLogRequest } from '../../src/resources/log-requests/queries.js';
import type { AuditEntry } from '../../src/resources/unit-of-work.js';
import { channelCredentials, clientsFor, csrFor, newDeviceKey, refusal, startChannelFixture, unary, type ChannelFixture } from '../fixtures/device-channel.js';
import { availableDrivers } from '../helpers/store.js';

/**
 * Device-channel changes and their audit rows commit together (spec §6 rule 1). The unit of
 * work's hook faults right after the audit row of one action is written, before COMMIT (what
 * test/helpers/audit-crash.ts does over HTTP with a killed process; the crash harness serves
 * the REST app only). Each case then shows that nothing of the change is left, and that the
 * same call without the fault makes the change and its row.
 */
describe.each(availableDrivers())('device channel changes and their audit rows in one unit of work on %s', (driver) => {
  let f: ChannelFixture;
  let faultOn: string | undefined;
  let faultBeforeCommitOf: string | undefined;
  let faultTarget: { action: string; target: string } | undefined;
  beforeAll(async () => {
    f = await startChannelFixture(driver, {
      hooks: {
        unitOfWork: {
          afterAudit: (entry: AuditEntry) => {
            if (entry.action === faultOn) throw new Error(`fault after the ${entry.action} audit row`);
            if (entry.action === faultTarget?.action && entry.target === faultTarget.target) throw new Error(`fault after the audit row of ${entry.target}`);
          },
          beforeCommit: (actions) => {
            if (faultBeforeCommitOf !== undefined && actions.includes(faultBeforeCommitOf))
              throw new Error(`fault before the COMMIT of ${faultBeforeCommitOf}`);
          },
        },
      },
    });
  });
  afterAll(async () => {
    await f?.dispose();
  });

  const audited = async (action: string, target: string) =>
    (await f.t.store.db.selectFrom('audit_events').select('id').where('action', '=', action).where('target', '=', target).execute()).length;

  async function enroll(name: string, token: string, key: Awaited<ReturnType<typeof newDeviceKey>>) {
    const anon = clientsFor(f.addr, channelCredentials(f.serverCaPem));
    try {
      const csrDer = await csrFor(key, name);
      return await unary<EnrollResponse>((cb) =>
        anon.enrollment.enroll(
          { token, deviceName: name, csrDer, inventory: { agentVersion: '0.1.0', profile: 'linux-arm64', product: 'x', slots: [], attributes: undefined } },
          cb,
        ),
      );
    } finally {
      anon.close();
    }
  }

  async function enrolled(name: string) {
    const key = await newDeviceKey();
    const res = await enroll(name, await f.newToken(), key);
    return { key, certPem: encodePem(res.certificateDer, 'CERTIFICATE') };
  }

  it('enrollment: the token use, the certificate log entry, the device and the device.enroll row', async () => {
    const db = f.t.store.db;
    const token = await f.newToken({ maxUses: 1 });
    const key = await newDeviceKey();
    faultOn = 'device.enroll';
    const failed = await refusal(enroll('uow-enroll', token, key));
    faultOn = undefined;
    expect(failed.code).toBe(status.INTERNAL);
    expect(await db.selectFrom('devices').select('id').where('name', '=', 'uow-enroll').execute()).toEqual([]);
    expect(await db.selectFrom('device_certificates').select('id').where('device_name', '=', 'uow-enroll').execute()).toEqual([]);
    expect((await db.selectFrom('enroll_tokens').select('uses').where('secret_hash', '=', hashSecret(token)).executeTakeFirstOrThrow()).uses).toBe(0);
    expect(await audited('device.enroll', 'device:uow-enroll')).toBe(0);

    // the single-use token was not spent: the same enrollment succeeds
    const res = await enroll('uow-enroll', token, key);
    expect(res.deviceName).toBe('uow-enroll');
    expect((await db.selectFrom('devices').select('status').where('name', '=', 'uow-enroll').executeTakeFirstOrThrow()).status).toBe('online');
    expect(await db.selectFrom('device_certificates').select('reason').where('device_name', '=', 'uow-enroll').execute()).toEqual([{ reason: 'enroll' }]);
    expect((await db.selectFrom('enroll_tokens').select('uses').where('secret_hash', '=', hashSecret(token)).executeTakeFirstOrThrow()).uses).toBe(1);
    expect(await audited('device.enroll', 'device:uow-enroll')).toBe(1);
  });

  it('enrollment: a failure after the token use was spent (right before COMMIT) costs no use; the retry enrolls', async () => {
    const db = f.t.store.db;
    const token = await f.newToken({ maxUses: 1 });
    const key = await newDeviceKey();
    const uses = async () => (await db.selectFrom('enroll_tokens').select('uses').where('secret_hash', '=', hashSecret(token)).executeTakeFirstOrThrow()).uses;
    faultBeforeCommitOf = 'device.enroll';
    const failed = await refusal(enroll('uow-late', token, key));
    faultBeforeCommitOf = undefined;
    expect(failed.code).toBe(status.INTERNAL);
    expect(await uses()).toBe(0);
    expect(await db.selectFrom('devices').select('id').where('name', '=', 'uow-late').execute()).toEqual([]);
    expect(await db.selectFrom('device_certificates').select('id').where('device_name', '=', 'uow-late').execute()).toEqual([]);
    expect(await audited('device.enroll', 'device:uow-late')).toBe(0);

    const res = await enroll('uow-late', token, key);
    expect(res.deviceName).toBe('uow-late');
    expect(await uses()).toBe(1);
    // the single use is spent now: a second enrollment is refused
    expect((await refusal(enroll('uow-late-2', token, key))).details).toMatch(/all 1 uses spent/);
  });

  it('enrollments arriving together commit together; a token used up inside a batch refuses only the surplus ones', async () => {
    const db = f.t.store.db;
    const token = await f.newToken({ maxUses: 5 });
    const names = Array.from({ length: 12 }, (_, i) => `uow-batch-${i}`);
    const keys = await Promise.all(names.map(() => newDeviceKey()));
    const results = await Promise.allSettled(names.map((n, i) => enroll(n, token, keys[i]!)));
    const ok = results.filter((r) => r.status === 'fulfilled').length;
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => (r.reason as { details: string }).details);
    expect(ok).toBe(5);
    expect(refused).toEqual(Array.from({ length: 7 }, () => 'enrollment token: all 5 uses spent'));
    expect((await db.selectFrom('enroll_tokens').select('uses').where('secret_hash', '=', hashSecret(token)).executeTakeFirstOrThrow()).uses).toBe(5);
    expect(await db.selectFrom('devices').select('name').where('name', 'like', 'uow-batch-%').execute()).toHaveLength(5);
    const audits = await db
      .selectFrom('audit_events')
      .select(['actor', 'target'])
      .where('action', '=', 'device.enroll')
      .where('target', 'like', 'device:uow-batch-%')
      .execute();
    expect(audits).toHaveLength(5);
    for (const a of audits) expect(a.actor).toBe(a.target);
  });

  it('a failure inside a group-committed batch fails that enrollment alone', async () => {
    const db = f.t.store.db;
    const names = Array.from({ length: 8 }, (_, i) => `uow-fault-${i}`);
    const tokens = await Promise.all(names.map(() => f.newToken({ maxUses: 1 })));
    const keys = await Promise.all(names.map(() => newDeviceKey()));
    const only = 'uow-fault-3';
    faultTarget = { action: 'device.enroll', target: `device:${only}` };
    const results = await Promise.allSettled(names.map((n, i) => enroll(n, tokens[i]!, keys[i]!)));
    faultTarget = undefined;
    expect(results.map((r) => r.status)).toEqual(names.map((n) => (n === only ? 'rejected' : 'fulfilled')));
    expect((await db.selectFrom('devices').select('name').where('name', 'like', 'uow-fault-%').orderBy('name').execute()).map((r) => r.name)).toEqual(
      names.filter((n) => n !== only),
    );
    expect((await db.selectFrom('enroll_tokens').select('uses').where('secret_hash', '=', hashSecret(tokens[3]!)).executeTakeFirstOrThrow()).uses).toBe(0);
  });

  it("renewal: the new certificate's log entry and the device.certificate.renew row", async () => {
    const db = f.t.store.db;
    const d = await enrolled('uow-renew');
    const before = await db.selectFrom('devices').select(['cert_fingerprint', 'cert_not_after']).where('name', '=', 'uow-renew').executeTakeFirstOrThrow();
    const c = clientsFor(f.addr, channelCredentials(f.serverCaPem, { keyPem: d.key.keyPem, certPem: d.certPem }));
    try {
      faultOn = 'device.certificate.renew';
      const failed = await refusal(unary(async (cb) => c.device.renewCertificate({ csrDer: await csrFor(d.key, 'uow-renew') }, cb)));
      faultOn = undefined;
      expect(failed.code).toBe(status.INTERNAL);
      expect(await db.selectFrom('devices').select(['cert_fingerprint', 'cert_not_after']).where('name', '=', 'uow-renew').executeTakeFirstOrThrow()).toEqual(
        before,
      );
      expect((await db.selectFrom('device_certificates').select('reason').where('device_name', '=', 'uow-renew').execute()).map((r) => r.reason)).toEqual([
        'enroll',
      ]);
      expect(await audited('device.certificate.renew', 'device:uow-renew')).toBe(0);
      // the current certificate still works
      expect((await unary<{ serverTime?: Date }>((cb) => c.device.ping({}, cb))).serverTime).toBeInstanceOf(Date);

      const renewed = await unary<RenewCertificateResponse>(async (cb) => c.device.renewCertificate({ csrDer: await csrFor(d.key, 'uow-renew') }, cb));
      expect(
        (await db.selectFrom('device_certificates').select('reason').where('device_name', '=', 'uow-renew').execute()).map((r) => r.reason).sort(),
      ).toEqual(['enroll', 'renew']);
      expect(await audited('device.certificate.renew', 'device:uow-renew')).toBe(1);
      // the logged renewal is what lets the new certificate in (and makes it current)
      const c2 = clientsFor(f.addr, channelCredentials(f.serverCaPem, { keyPem: d.key.keyPem, certPem: encodePem(renewed.certificateDer, 'CERTIFICATE') }));
      try {
        expect((await unary<{ serverTime?: Date }>((cb) => c2.device.ping({}, cb))).serverTime).toBeInstanceOf(Date);
      } finally {
        c2.close();
      }
      const after = await db.selectFrom('devices').select('cert_fingerprint').where('name', '=', 'uow-renew').executeTakeFirstOrThrow();
      expect(after.cert_fingerprint).not.toBe(before.cert_fingerprint);
    } finally {
      c.close();
    }
  });

  it('log-bundle upload: the stored bundle and the device.log-bundle.upload row', async () => {
    const db = f.t.store.db;
    const d = await enrolled('uow-logs');
    const dev = await db.selectFrom('devices').select('id').where('name', '=', 'uow-logs').executeTakeFirstOrThrow();
    const req = await insertLogRequest(db, f.tenantId, dev.id, 'admin@example.test');
    const c = clientsFor(f.addr, channelCredentials(f.serverCaPem, { keyPem: d.key.keyPem, certPem: d.certPem }));
    const upload = (bytes: Buffer) =>
      new Promise<{ length: number }>((resolve, reject) => {
        const s = c.device.uploadLogBundle((err, res) => (err ? reject(err) : resolve(res)));
        s.write({ header: { logRequestId: req.id, contentType: 'application/gzip' } });
        s.write({ chunk: bytes });
        s.end();
      });
    try {
      const checkIn = await unary<CheckInResponse>((cb) => c.device.checkIn({ inventory: undefined }, cb));
      expect(checkIn.logRequests.map((r) => r.id)).toEqual([req.id]);
      faultOn = 'device.log-bundle.upload';
      const failed = await refusal(upload(Buffer.alloc(100, 1)));
      faultOn = undefined;
      expect(failed.code).toBe(status.INTERNAL);
      expect(await db.selectFrom('log_requests').select(['status', 'content']).where('id', '=', req.id).executeTakeFirstOrThrow()).toEqual({
        status: 'delivered',
        content: null,
      });
      expect(await audited('device.log-bundle.upload', `log-request:${req.id}`)).toBe(0);

      expect((await upload(Buffer.alloc(100, 1))).length).toBe(100);
      expect((await db.selectFrom('log_requests').select('status').where('id', '=', req.id).executeTakeFirstOrThrow()).status).toBe('uploaded');
      expect(await audited('device.log-bundle.upload', `log-request:${req.id}`)).toBe(1);
    } finally {
      c.close();
    }
  });
});
