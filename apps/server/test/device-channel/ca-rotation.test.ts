import { deviceCaKeyRef } from '../../src/device-channel/ca-key.js';
/**
 * Device CA rotation (SVC_KEY_RECOVERY=device-ca-rotate, docs/device-channel.md "Device CA
 * rotation"), in process against the real device channel (mTLS gRPC on loopback) and a real
 * store: a lost device CA key fails the key check naming it; the recovery makes a new CA
 * current, retires the old one (kept, trusted until the last certificate it issued expires)
 * and audits it in the same transaction; the running channel learns of the change through the
 * store's notification; a device enrolled before still connects and its receipt is accepted;
 * enrollments and renewals are issued by the new CA; the receipts export verifies offline with
 * the built `svc-release verify-receipt` against the CA bundle it carries; a certificate of the
 * retired CA past its trust window is refused.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { X509Certificate } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { status } from '@grpc/grpc-js';
import type { RenewCertificateResponse, UploadReceiptResponse } from '@svc/device-proto';
import { encodePem, sha256Digest } from '@svc/release-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deviceCaKeysChecker } from '../../src/key-integrity/checkers.js';
import { keyRecoveryFromEnv, runKeyCheck } from '../../src/key-integrity/key-check.js';
import { ConfigError } from '../../src/config.js';
import { tenantDeviceCaBundlePem, tenantDeviceCas } from '../../src/resources/device-ca/queries.js';
import { receiptExportStream } from '../../src/resources/release-receipts/export.js';
import { iterateReceipts } from '../../src/resources/release-receipts/queries.js';
import { receiptDetail } from '../../src/resources/release-receipts/views.js';
import {
  channelCredentials,
  clientsFor,
  csrFor,
  enrollDevice,
  publishSignedRollout,
  refusal,
  startChannelFixture,
  unary,
  type ChannelFixture,
  type EnrolledDevice,
  type PublishedRelease,
} from '../fixtures/device-channel.js';
import { availableDrivers } from '../helpers/store.js';
import { untar } from '../fixtures/release-flow.js';
import { signedReceipt } from '../fixtures/receipt-batches.js';

const CLI = resolve(import.meta.dirname, '../../../cli/bin/run.js');
const CLI_BUILT = existsSync(resolve(import.meta.dirname, '../../../cli/dist/commands/verify-receipt.js'));
if (!CLI_BUILT && process.env.CI === 'true') throw new Error('apps/cli is not built (dist/commands/verify-receipt.js missing): run pnpm build first');

/** Polls `ready` until it holds; bound by progress (the notification arriving), not by a fixed sleep. */
async function until(ready: () => boolean | Promise<boolean>, what: string, limitMs = 30_000): Promise<void> {
  const start = Date.now();
  while (!(await ready())) {
    if (Date.now() - start > limitMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const ping = (c: ReturnType<typeof clientsFor>) => unary<{ serverTime?: Date }>((cb) => c.device.ping({}, cb));

describe('SVC_KEY_RECOVERY', () => {
  it('is unset, one recovery, or a comma-separated list of them; anything else is a setting error naming the variable', () => {
    expect([...keyRecoveryFromEnv({})]).toEqual([]);
    expect([...keyRecoveryFromEnv({ SVC_KEY_RECOVERY: '' })]).toEqual([]);
    expect([...keyRecoveryFromEnv({ SVC_KEY_RECOVERY: 'device-ca-rotate' })]).toEqual(['device-ca-rotate']);
    expect([...keyRecoveryFromEnv({ SVC_KEY_RECOVERY: 'device-ca-rotate, evidence-rotate,tuf-online-rotate' })]).toEqual([
      'device-ca-rotate',
      'evidence-rotate',
      'tuf-online-rotate',
    ]);
    expect(() => keyRecoveryFromEnv({ SVC_KEY_RECOVERY: 'device-ca-rotate,ca-rotate' })).toThrow(ConfigError);
    expect(() => keyRecoveryFromEnv({ SVC_KEY_RECOVERY: 'device-ca-rotate,ca-rotate' })).toThrow(/^SVC_KEY_RECOVERY: .*got "ca-rotate"/);
    expect(() => keyRecoveryFromEnv({ SVC_KEY_RECOVERY: 'evidence-rotate,' })).toThrow(/^SVC_KEY_RECOVERY: /);
    expect(() => keyRecoveryFromEnv({ SVC_KEY_RECOVERY: 'evidence-rotate,evidence-rotate' })).toThrow(/^SVC_KEY_RECOVERY: evidence-rotate is listed twice/);
  });
});

describe.each(availableDrivers())('device CA rotation on %s', (driver) => {
  let f: ChannelFixture;
  let dir: string;
  /** The channel's clock: real time plus `skew` (the trust window's end is reached by moving it). */
  let skew = 0;
  const now = () => new Date(Date.now() + skew);
  let rel: PublishedRelease;
  let before: EnrolledDevice[];
  let oldCaDer: Uint8Array;
  let oldKeyFile: string;
  let rotatedAt: Date;
  const extra: { close(): void }[] = [];

  beforeAll(async () => {
    // the periodic trust refresh stays out of the way: the notification and the test decide when it runs
    f = await startChannelFixture(driver, { now, trustRefreshMs: 3_600_000 });
    dir = await mkdtemp(join(tmpdir(), 'svc-ca-rotation-'));
    before = [];
    for (const name of ['old-1', 'old-2', 'old-3']) before.push(await enrollDevice(f, name));
    rel = await publishSignedRollout(f, { devices: ['old-1', 'old-2'], bytes: Buffer.from('rotation\n'), placementPath: '/etc/edge/rotation.conf' });
    const [ca] = await tenantDeviceCas(f.t.store.db, f.tenantId);
    oldCaDer = ca!.certDer;
    oldKeyFile = ca!.keyFile;
  });
  afterAll(async () => {
    for (const c of extra) c.close();
    for (const d of before ?? []) d.clients.close();
    await f?.dispose();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const clientOf = (d: { key: EnrolledDevice['key'] }, certPem: string) => {
    // a new client is a new connection: a new TLS handshake against the trust store of the moment
    const c = clientsFor(f.addr, channelCredentials(f.serverCaPem, { keyPem: d.key.keyPem, certPem }));
    extra.push(c);
    return c;
  };

  it('a lost device CA key fails the check naming it; device-ca-rotate makes a new CA current, retires the old one and audits it', async () => {
    const db = f.t.store.db;
    await f.repo.wrappedKeys.remove(deviceCaKeyRef(f.tenantId, oldKeyFile));
    const checker = deviceCaKeysChecker(db, f.repo.wrappedKeys, now);
    const refused = await runKeyCheck([checker]);
    expect(refused.failure?.problem).toBe(`device CA key of tenant ${f.tenantId} is missing (wrapped key ${f.tenantId}/device-ca/${oldKeyFile})`);
    expect(refused.failure?.remedy).toMatch(/SVC_KEY_RECOVERY=device-ca-rotate/);
    // another recovery does not touch it
    expect((await runKeyCheck([checker], new Set(['evidence-rotate']))).failure?.key).toBe(`device CA key of tenant ${f.tenantId}`);

    const generation = f.ctx.cas.generation;
    const lastExpiry = (
      await db.selectFrom('device_certificates').select('not_after').where('tenant_id', '=', f.tenantId).orderBy('not_after', 'desc').executeTakeFirstOrThrow()
    ).not_after;
    const recovered = await runKeyCheck([checker], new Set(['device-ca-rotate']));
    expect(recovered.failure).toBeUndefined();
    expect(recovered.reports).toEqual([{ key: `device CA key of tenant ${f.tenantId}`, tenantId: f.tenantId, state: 'ok' }]);
    expect(recovered.recovered).toHaveLength(1);
    expect(recovered.recovered[0]).toMatch(new RegExp(`^device CA rotated: tenant ${f.tenantId}, CA 1 retired \\(trusted until .*\\), CA 2 current$`));

    const cas = await tenantDeviceCas(db, f.tenantId);
    expect(cas.map((c) => [c.seq, c.retiredAt === undefined])).toEqual([
      [2, true],
      [1, false],
    ]);
    const [current, retired] = cas as [(typeof cas)[0], (typeof cas)[0]];
    expect(Buffer.from(retired.certDer).equals(Buffer.from(oldCaDer))).toBe(true);
    // trusted until the last certificate issued before the rotation expires
    expect(retired.trustedUntil?.toISOString()).toBe(new Date(lastExpiry).toISOString());
    rotatedAt = retired.retiredAt!;
    expect(new X509Certificate(Buffer.from(current.certDer)).subject).toBe(`CN=svc device CA ${f.tenantId} #2`);
    expect(await f.repo.wrappedKeys.load(deviceCaKeyRef(f.tenantId, current.keyFile))).toBeDefined();
    const row = await db.selectFrom('device_cas').select(['retired_by']).where('tenant_id', '=', f.tenantId).where('seq', '=', 1).executeTakeFirstOrThrow();
    expect(row.retired_by).toBe('system:key-recovery');
    const audit = await db
      .selectFrom('audit_events')
      .select(['action', 'actor', 'target', 'detail', 'tenant_id'])
      .where('action', '=', 'device-ca.rotate')
      .execute();
    expect(audit).toEqual([
      {
        action: 'device-ca.rotate',
        actor: 'system:key-recovery',
        target: 'device-ca:2',
        tenant_id: f.tenantId,
        detail: {
          seq: 2,
          fingerprint: sha256Digest(current.certDer),
          previous_seq: 1,
          previous_fingerprint: sha256Digest(oldCaDer),
          previous_trusted_until: retired.trustedUntil!.toISOString(),
        },
      },
    ]);
    // the running channel (another CA store on the same database) learns of it through the notification
    await until(() => f.ctx.cas.generation !== generation, 'the device channel to re-read the device CAs');
    // the next check needs no recovery
    expect((await runKeyCheck([checker])).failure).toBeUndefined();
  });

  it('a device enrolled before the rotation still connects, and its receipt is accepted and verifies', async () => {
    const old1 = before[0]!;
    const c = clientOf(old1, old1.certPem);
    expect((await ping(c)).serverTime).toBeInstanceOf(Date);
    const ok = await unary<UploadReceiptResponse>((cb) => c.device.uploadReceipt({ envelope: signedReceipt(f.tenantId, rel, old1) }, cb));
    expect(ok.duplicate).toBe(false);
    const detail = await receiptDetail(f.t.store.db, f.tenantId, ok.receiptId, new Date());
    expect(detail?.verification).toMatchObject({ verified: true, error: null, device_certificate: { fingerprint: sha256Digest(old1.certDer) } });
  });

  it('a device enrolled after the rotation gets a certificate from the new CA', async () => {
    const [current] = await tenantDeviceCas(f.t.store.db, f.tenantId);
    const d = await enrollDevice(f, 'new-1');
    before.push(d);
    const cert = new X509Certificate(Buffer.from(d.certDer));
    const newCa = new X509Certificate(Buffer.from(current!.certDer));
    expect(cert.checkIssued(newCa) && cert.verify(newCa.publicKey)).toBe(true);
    expect(cert.verify(new X509Certificate(Buffer.from(oldCaDer)).publicKey)).toBe(false);
    expect((await ping(d.clients)).serverTime).toBeInstanceOf(Date);
  });

  it('renewing a device of the old CA moves it to the new one; its receipt is accepted', async () => {
    const old2 = before[1]!;
    const c = clientOf(old2, old2.certPem);
    const res = await unary<RenewCertificateResponse>(async (cb) => c.device.renewCertificate({ csrDer: await csrFor(old2.key, 'old-2') }, cb));
    const [current] = await tenantDeviceCas(f.t.store.db, f.tenantId);
    const renewed = new X509Certificate(res.certificateDer);
    expect(renewed.issuer).toBe(`CN=svc device CA ${f.tenantId} #2`);
    expect(renewed.verify(new X509Certificate(Buffer.from(current!.certDer)).publicKey)).toBe(true);
    const certPem = encodePem(res.certificateDer, 'CERTIFICATE');
    const moved = { ...old2, certPem, certDer: new Uint8Array(res.certificateDer) };
    const c2 = clientOf(old2, certPem);
    const ok = await unary<UploadReceiptResponse>((cb) => c2.device.uploadReceipt({ envelope: signedReceipt(f.tenantId, rel, moved) }, cb));
    expect(ok.duplicate).toBe(false);
    // the renewed certificate is now the device's: the old CA's one stops working
    const stale = await refusal(ping(clientOf(old2, old2.certPem)));
    expect(stale.details).toBe('device old-2: certificate revoked or superseded');
  });

  it.skipIf(!CLI_BUILT)(
    'the receipts export carries both CAs: each receipt verifies offline with svc-release verify-receipt',
    async () => {
      const db = f.t.store.db;
      const files = await untar(receiptExportStream(iterateReceipts(db, f.tenantId, {}), new Date(), await tenantDeviceCaBundlePem(db, f.tenantId)));
      const index = files
        .get('index.jsonl')!
        .toString()
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { file: string; device: string });
      expect(index.map((r) => r.device).sort()).toEqual(['old-1', 'old-2']);
      const bundle = join(dir, 'device-cas.pem');
      await writeFile(bundle, files.get('device-cas.pem')!);
      const onlyNew = join(dir, 'new-ca.pem');
      const [current] = await tenantDeviceCas(db, f.tenantId);
      await writeFile(onlyNew, encodePem(current!.certDer, 'CERTIFICATE'));
      for (const r of index) {
        const receipt = join(dir, r.device + '.dsse.json');
        await writeFile(receipt, files.get(r.file)!);
        const verify = (ca: string) =>
          spawnSync(process.execPath, [CLI, 'verify-receipt', receipt, '--ca', ca, '--tenant', f.tenantId, '--device', r.device, '--json'], {
            encoding: 'utf8',
          });
        const ok = verify(bundle);
        expect(ok.status, ok.stderr).toBe(0);
        expect(JSON.parse(ok.stdout)).toMatchObject({ device: r.device, tenant: f.tenantId });
        // old-1's certificate is the retired CA's: the new CA alone does not verify it
        if (r.device === 'old-1') {
          const refused = verify(onlyNew);
          expect(refused.status).toBe(1);
          expect(refused.stderr).toMatch(/CERT_UNTRUSTED/);
        }
      }
    },
    60_000,
  );

  it('a certificate of the retired CA past its trust window is refused: by the peer check, then by TLS once the trust store is re-read', async () => {
    const retired = (await tenantDeviceCas(f.t.store.db, f.tenantId)).find((c) => c.seq === 1)!;
    const old3 = before[2]!;
    // inside the window (the rotation's time) it is still accepted
    expect(rotatedAt.getTime()).toBeLessThan(retired.trustedUntil!.getTime());
    expect((await ping(clientOf(old3, old3.certPem))).serverTime).toBeInstanceOf(Date);
    skew = retired.trustedUntil!.getTime() + 1000 - Date.now();
    try {
      const byPeer = await refusal(ping(clientOf(old3, old3.certPem)));
      expect(byPeer.code).toBe(status.UNAUTHENTICATED);
      expect(byPeer.details).toBe(
        `client certificate: issued by the retired device CA 1 of the tenant, trusted until ${retired.trustedUntil!.toISOString()} (enroll again)`,
      );
      // the trust store re-read at that time leaves the retired CA out: the handshake hands over no certificate
      await f.ctx.cas.onChanged!();
      const byTls = await refusal(ping(clientOf(old3, old3.certPem)));
      expect(byTls.details).toMatch(/^client certificate: missing, expired, or not issued by a device CA/);
    } finally {
      skew = 0;
      await f.ctx.cas.onChanged!();
    }
  });
});
