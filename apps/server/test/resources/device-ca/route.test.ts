import { defaultWrappedKeys } from '../../../src/key-custody/kek-source.js';
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeviceCaStore } from '../../../src/device-channel/device-ca.js';
import { systemActor } from '../../../src/resources/unit-of-work.js';
import { availableDrivers } from '../../helpers/store.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';

describe.each(availableDrivers())('GET /api/v1/device-ca on %s', (driver) => {
  let t: TestApp;
  let dataDir: string;
  beforeAll(async () => {
    t = await createTestApp(driver);
    dataDir = await mkdtemp(join(tmpdir(), 'svc-device-ca-route-'));
  });
  afterAll(async () => {
    await t?.dispose();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('is 404 before the first enrollment, then serves the CA the channel issues from', async () => {
    const headers = await t.apiKeyHeaders('viewer');
    const before = await t.app.inject({ method: 'GET', url: '/api/v1/device-ca', headers });
    expect(before.statusCode).toBe(404);
    expect(before.json().error).toMatch(/^device CA not found/);

    const cas = new DeviceCaStore(t.testStore.store.db, defaultWrappedKeys(t.testStore.store.db, dataDir));
    await cas.get(t.tenantId, new Date());
    const [der] = await cas.allCertificates(new Date());

    const res = await t.app.inject({ method: 'GET', url: '/api/v1/device-ca', headers });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.tenant_id).toBe(t.tenantId);
    expect(body.fingerprint).toMatch(/^sha256:[0-9a-f]{64}$/);
    // The PEM is the stored DER, and OpenSSL reads it.
    const file = join(dataDir, 'ca.pem');
    await writeFile(file, body.certificate_pem);
    const outDer = execFileSync('openssl', ['x509', '-in', file, '-outform', 'DER']);
    expect(Buffer.compare(outDer, Buffer.from(der!))).toBe(0);
    expect(Date.parse(body.not_after)).toBeGreaterThan(Date.now());

    expect(body).toMatchObject({ seq: 1, retired: [] });

    const pem = await t.app.inject({ method: 'GET', url: '/api/v1/device-ca.pem', headers });
    expect(pem.statusCode).toBe(200);
    expect(pem.headers['content-type']).toMatch(/^application\/x-pem-file/);
    expect(pem.body).toBe(body.certificate_pem);

    // after a rotation: the new CA is current, the old one listed as retired, the PEM is both (current first)
    const rotated = await cas.rotate(t.tenantId, new Date(), systemActor('test'));
    const after = (await t.app.inject({ method: 'GET', url: '/api/v1/device-ca', headers })).json();
    expect(after).toMatchObject({ seq: 2, retired: [{ seq: 1, certificate_pem: body.certificate_pem, fingerprint: body.fingerprint }] });
    expect(after.certificate_pem).not.toBe(body.certificate_pem);
    expect(after.retired[0].retired_at).toBe(rotated.previous.retiredAt.toISOString());
    expect(after.retired[0].trusted_until).toBe(rotated.previous.trustedUntil.toISOString());
    const bundle = await t.app.inject({ method: 'GET', url: '/api/v1/device-ca.pem', headers });
    expect(bundle.body).toBe(after.certificate_pem + body.certificate_pem);
  });

  it('needs a credential and shows only the caller tenant', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/device-ca' })).statusCode).toBe(401);
    const other = await t.newTenant();
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/device-ca', headers: await t.apiKeyHeaders('viewer', other) });
    expect(res.statusCode).toBe(404);
  });
});
