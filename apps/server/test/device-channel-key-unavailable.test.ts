/**
 * A device CA key that disappears (or is replaced by garbage) while the device channel runs:
 * enrollment answers UNAVAILABLE with the `KEY_UNAVAILABLE` trailer and a message naming the
 * key and its tenant, never INTERNAL; a key put back makes enrollment work again.
 */
import { copyFile, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import type { EnrollResponse } from '@svc/device-proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeviceCaStore } from '../src/device-channel/device-ca.js';
import { getDeviceCa } from '../src/resources/device-ca/queries.js';
import { createTenant } from '../src/resources/tenants/queries.js';
import { channelCredentials, clientsFor, csrFor, newDeviceKey, refusal, startChannelFixture, unary, type ChannelFixture } from './device-channel.fixture.js';
import { availableDrivers } from './helpers/store.js';

describe.each(availableDrivers())('device CA key unavailable at run time on %s', (driver) => {
  let f: ChannelFixture;
  beforeAll(async () => {
    f = await startChannelFixture(driver);
  });
  afterAll(async () => {
    await f.dispose();
  });

  /** A tenant whose CA another process created: this process has not read its key yet. */
  async function tenantWithCa(name: string): Promise<{ tenantId: string; keyPath: string }> {
    const tenantId = await createTenant(f.t.store.db, name);
    await new DeviceCaStore(f.t.store.db, f.dataDir).get(tenantId, new Date());
    const keyFile = (await getDeviceCa(f.t.store.db, tenantId))!.keyFile;
    return { tenantId, keyPath: join(f.dataDir, 'ca', tenantId, keyFile) };
  }

  async function enroll(tenantId: string, name: string): Promise<EnrollResponse> {
    const key = await newDeviceKey();
    const anon = clientsFor(f.addr, channelCredentials(f.serverCaPem));
    try {
      const token = await f.newToken({ tenantId });
      const csrDer = await csrFor(key, name);
      return await unary<EnrollResponse>((cb) =>
        anon.enrollment.enroll(
          { token, deviceName: name, csrDer, inventory: { agentVersion: '1', profile: 'linux-arm64', product: 'edge', slots: [], attributes: undefined } },
          cb,
        ),
      );
    } finally {
      anon.close();
    }
  }

  it('a deleted device CA key: UNAVAILABLE / KEY_UNAVAILABLE naming it; back in place, enrollment works', async () => {
    const { tenantId, keyPath } = await tenantWithCa('lost-ca-key');
    await copyFile(keyPath, `${keyPath}.saved`);
    await unlink(keyPath);
    const r = await refusal(enroll(tenantId, 'dev-1'));
    expect(r.code).toBe(status.UNAVAILABLE);
    expect(r.svcCode).toBe('KEY_UNAVAILABLE');
    expect(r.details).toMatch(new RegExp(`^KEY_UNAVAILABLE: device CA key of tenant ${tenantId} is missing`));
    await copyFile(`${keyPath}.saved`, keyPath);
    const ok = await enroll(tenantId, 'dev-1');
    expect(ok.certificateDer.length).toBeGreaterThan(0);
  });

  it('a device CA key of garbage bytes: UNAVAILABLE / KEY_UNAVAILABLE naming it', async () => {
    const { tenantId, keyPath } = await tenantWithCa('garbage-ca-key');
    await writeFile(keyPath, 'not a key\n');
    const r = await refusal(enroll(tenantId, 'dev-2'));
    expect(r.code).toBe(status.UNAVAILABLE);
    expect(r.svcCode).toBe('KEY_UNAVAILABLE');
    expect(r.details).toMatch(new RegExp(`^KEY_UNAVAILABLE: device CA key of tenant ${tenantId} is unreadable`));
  });
});
