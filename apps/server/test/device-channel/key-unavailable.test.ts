import { deviceCaKeyRef } from '../../src/device-channel/ca-key.js';
import { getWrappedKey, insertWrappedKey, upsertWrappedKey } from '../../src/key-custody/queries.js';
import { keyIdOfRef, type KeyRef } from '../../src/key-custody/wrapped-keys.js';
/**
 * A device CA key that disappears (or is replaced by garbage) while the device channel runs:
 * enrollment answers UNAVAILABLE with the `KEY_UNAVAILABLE` trailer and a message naming the
 * key and its tenant, never INTERNAL; a key put back makes enrollment work again.
 */
import { status } from '@grpc/grpc-js';
import type { EnrollResponse } from '@svc/device-proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeviceCaStore } from '../../src/device-channel/device-ca.js';
import { getDeviceCa } from '../../src/resources/device-ca/queries.js';
import { createTenant } from '../../src/resources/tenants/queries.js';
import { channelCredentials, clientsFor, csrFor, newDeviceKey, refusal, startChannelFixture, unary, type ChannelFixture } from '../fixtures/device-channel.js';
import { availableDrivers } from '../helpers/store.js';

describe.each(availableDrivers())('device CA key unavailable at run time on %s', (driver) => {
  let f: ChannelFixture;
  beforeAll(async () => {
    f = await startChannelFixture(driver);
  });
  afterAll(async () => {
    await f.dispose();
  });

  /** A tenant whose CA another process created: this process has not read its key yet. */
  async function tenantWithCa(name: string): Promise<{ tenantId: string; ref: KeyRef }> {
    const tenantId = await createTenant(f.t.store.db, name);
    await new DeviceCaStore(f.t.store.db, f.repo.wrappedKeys).get(tenantId, new Date());
    const keyFile = (await getDeviceCa(f.t.store.db, tenantId))!.keyFile;
    return { tenantId, ref: deviceCaKeyRef(tenantId, keyFile) };
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
    const { tenantId, ref } = await tenantWithCa('lost-ca-key');
    const saved = (await getWrappedKey(f.t.store.db, keyIdOfRef(ref)))!;
    await f.repo.wrappedKeys.remove(ref);
    const r = await refusal(enroll(tenantId, 'dev-1'));
    expect(r.code).toBe(status.UNAVAILABLE);
    expect(r.svcCode).toBe('KEY_UNAVAILABLE');
    expect(r.details).toMatch(new RegExp(`^KEY_UNAVAILABLE: device CA key of tenant ${tenantId} is missing`));
    await insertWrappedKey(f.t.store.db, {
      keyId: saved.key_id,
      tenantId: saved.tenant_id,
      name: saved.name,
      publicKeyId: saved.public_key_id,
      wrapAlg: saved.wrap_alg,
      kekId: saved.kek_id,
      wrapped: saved.wrapped,
    });
    const ok = await enroll(tenantId, 'dev-1');
    expect(ok.certificateDer.length).toBeGreaterThan(0);
  });

  it('a device CA key of garbage bytes: UNAVAILABLE / KEY_UNAVAILABLE naming it', async () => {
    const { tenantId, ref } = await tenantWithCa('garbage-ca-key');
    const row = (await getWrappedKey(f.t.store.db, keyIdOfRef(ref)))!;
    await upsertWrappedKey(f.t.store.db, {
      keyId: row.key_id,
      tenantId: row.tenant_id,
      name: row.name,
      publicKeyId: row.public_key_id,
      wrapAlg: row.wrap_alg,
      kekId: row.kek_id,
      wrapped: Buffer.from('not a wrapped key, same length or not'),
    });
    const r = await refusal(enroll(tenantId, 'dev-2'));
    expect(r.code).toBe(status.UNAVAILABLE);
    expect(r.svcCode).toBe('KEY_UNAVAILABLE');
    expect(r.details).toMatch(new RegExp(`^KEY_UNAVAILABLE: device CA key of tenant ${tenantId} is unreadable`));
  });
});
