import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { envelopeBytes, parsePrivateKeyPem, signReceipt } from '@svc/release-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectFailure, requireTool, runCli, tempDir } from './helpers/cli.js';
import { OTHER_TENANT, PRODUCT, TENANT, jcs, sha256Hex } from './helpers/fixtures.js';
import { makeCa, makeDeviceCert, type CertFiles } from '@svc/test-kit';

const hasOpenssl = requireTool('openssl');
const DEVICE = 'gw-0042';
const d = (s: string) => `sha256:${sha256Hex(s)}`;

function receiptPayload(certificate: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    tenant: TENANT,
    device: { name: DEVICE, certificate },
    release: { product: PRODUCT, version: '1.4.0', payload_digest: d('payload'), envelope_digest: d('envelope') },
    rollout: 'ro-7f3a',
    candidate_digest: d('candidate'),
    previous_digest: null,
    resulting_digest: d('candidate'),
    activation: 'activated',
    health: 'healthy',
    timestamp: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
    ...over,
  };
}

/** OpenSSL-made CA and device certificate; the receipt signed with the OpenSSL-made device key. */
describe.skipIf(!hasOpenssl)('svc-release verify-receipt', () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  const p = (name: string) => join(tmp.dir, name);
  let ca: { cert: string; key: string };
  let foreignCa: { cert: string; key: string };
  let device: CertFiles;
  const args = (file: string, ...extra: string[]) => ['verify-receipt', file, '--ca', ca.cert, '--tenant', TENANT, '--device', DEVICE, ...extra];

  beforeAll(async () => {
    tmp = await tempDir();
    ca = makeCa(tmp.dir, 'tenant-ca');
    foreignCa = makeCa(tmp.dir, 'foreign-ca');
    device = makeDeviceCert(tmp.dir, ca, TENANT, DEVICE);
    const env = signReceipt(receiptPayload(device.certDer.toString('base64')) as never, parsePrivateKeyPem(device.keyPem));
    await writeFile(p('receipt.json'), envelopeBytes(env));
  });
  afterAll(() => tmp.cleanup());

  it('a CA bundle (a device CA rotation: current and retired CAs, e.g. device-cas.pem of an export) verifies with the CA that issued the certificate', async () => {
    await writeFile(p('bundle.pem'), `${await readFile(foreignCa.cert, 'utf8')}${await readFile(ca.cert, 'utf8')}`);
    const r = await runCli(['verify-receipt', p('receipt.json'), '--ca', p('bundle.pem'), '--tenant', TENANT, '--device', DEVICE, '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ device: DEVICE, tenant: TENANT });
  });

  it('exit 0 with a summary: device, release, activation, health, digests', async () => {
    const r = await runCli(args(p('receipt.json')));
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const env = JSON.parse(await readFile(p('receipt.json'), 'utf8')) as { payload: string };
    const lines = r.stdout.split('\n');
    expect(lines).toContain(`device: ${DEVICE} (tenant ${TENANT})`);
    expect(lines).toContain(`release: ${PRODUCT} 1.4.0`);
    expect(lines).toContain('activation: activated');
    expect(lines).toContain('health: healthy');
    expect(lines).toContain(`payload digest: sha256:${sha256Hex(Buffer.from(env.payload, 'base64'))}`);
    expect(lines).toContain(`envelope digest: sha256:${sha256Hex(jcs(env))}`);
  });

  it('--json prints one object', async () => {
    const r = await runCli(args(p('receipt.json'), '--json'));
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      device: DEVICE,
      tenant: TENANT,
      product: PRODUCT,
      version: '1.4.0',
      rollout: 'ro-7f3a',
      activation: 'activated',
      health: 'healthy',
      previous_digest: null,
      candidate_digest: d('candidate'),
      payload_digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
      envelope_digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
    });
  });

  describe('refusals: exit 1, one stderr line', () => {
    it('wrong device name', async () => {
      const r = await runCli(['verify-receipt', p('receipt.json'), '--ca', ca.cert, '--tenant', TENANT, '--device', 'gw-0043']);
      expectFailure(r, 1, /^refused: CERT_IDENTITY_MISMATCH: /);
    });

    it('wrong tenant', async () => {
      const r = await runCli(['verify-receipt', p('receipt.json'), '--ca', ca.cert, '--tenant', OTHER_TENANT, '--device', DEVICE]);
      expectFailure(r, 1, /^refused: CERT_IDENTITY_MISMATCH: device certificate is for tenant /);
    });

    it('foreign CA', async () => {
      const r = await runCli(['verify-receipt', p('receipt.json'), '--ca', foreignCa.cert, '--tenant', TENANT, '--device', DEVICE]);
      expectFailure(r, 1, /^refused: CERT_UNTRUSTED: /);
    });

    it('a CA bundle without the issuing CA', async () => {
      await writeFile(p('foreign-bundle.pem'), (await readFile(foreignCa.cert, 'utf8')) + (await readFile(foreignCa.cert, 'utf8')));
      const r = await runCli(['verify-receipt', p('receipt.json'), '--ca', p('foreign-bundle.pem'), '--tenant', TENANT, '--device', DEVICE]);
      expectFailure(r, 1, /^refused: CERT_UNTRUSTED: /);
    });

    it('tampered receipt', async () => {
      const env = JSON.parse(await readFile(p('receipt.json'), 'utf8')) as { payload: string };
      const payload = JSON.parse(Buffer.from(env.payload, 'base64').toString('utf8')) as Record<string, unknown>;
      const tampered = jcs({ ...payload, health: 'unhealthy' });
      await writeFile(p('tampered.json'), JSON.stringify({ ...env, payload: tampered.toString('base64') }));
      expectFailure(await runCli(args(p('tampered.json'))), 1, /^refused: SIGNATURE_INVALID: /);
    });

    it('a certificate from a device the receipt does not claim to be', async () => {
      // Another device of the same tenant signs a receipt that names gw-0042.
      const other = makeDeviceCert(tmp.dir, ca, TENANT, 'gw-0099');
      const env = signReceipt(receiptPayload(other.certDer.toString('base64')) as never, parsePrivateKeyPem(other.keyPem));
      await writeFile(p('impostor.json'), envelopeBytes(env));
      expectFailure(await runCli(args(p('impostor.json'))), 1, /^refused: CERT_IDENTITY_MISMATCH: /);
    });

    it('a receipt naming another tenant than the one its certificate names', async () => {
      const env = signReceipt(receiptPayload(device.certDer.toString('base64'), { tenant: OTHER_TENANT }) as never, parsePrivateKeyPem(device.keyPem));
      await writeFile(p('other-tenant.json'), envelopeBytes(env));
      expectFailure(await runCli(args(p('other-tenant.json'))), 1, /^refused: TENANT_MISMATCH: /);
    });

    it('a CA file that is not a certificate', async () => {
      const r = await runCli(['verify-receipt', p('receipt.json'), '--ca', device.key, '--tenant', TENANT, '--device', DEVICE]);
      expectFailure(r, 1, /^refused: CERT_INVALID: /);
    });

    it('a release envelope is not a receipt', async () => {
      const env = { payloadType: 'svc.release.v1', payload: Buffer.from('{}').toString('base64'), signatures: [{ keyid: 'x', sig: 'AA==' }] };
      await writeFile(p('release-env.json'), JSON.stringify(env));
      expectFailure(await runCli(args(p('release-env.json'))), 1, /^refused: PAYLOAD_TYPE_UNKNOWN: /);
    });
  });

  it('usage errors: missing --device, missing CA file', async () => {
    expectFailure(await runCli(['verify-receipt', p('receipt.json'), '--ca', ca.cert, '--tenant', TENANT]), 2, /^usage: USAGE: .*device/);
    expectFailure(await runCli(args(p('receipt.json')).map((a) => (a === ca.cert ? p('missing-ca.pem') : a))), 2, /^usage: INPUT_UNREADABLE: CA certificate /);
  });
});
