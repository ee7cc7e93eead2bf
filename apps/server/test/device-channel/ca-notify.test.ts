import 'reflect-metadata';
import type { ServiceError } from '@grpc/grpc-js';
import type { EnrollResponse } from '@svc/device-proto';
import { encodePem } from '@svc/release-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeviceChannelServer } from '../../src/device-channel/channel-server.js';
import { startDeviceChannelService } from '../../src/device-channel/wiring.js';
import { createTenant } from '../../src/resources/tenants/queries.js';
import { channelCredentials, clientsFor, csrFor, newDeviceKey, startChannelFixture, unary, type ChannelFixture } from '../fixtures/device-channel.js';
import { availableDrivers } from '../helpers/store.js';

/**
 * Two device channels on one database (two server processes, as far as trust goes): a tenant's
 * first enrollment through A creates its device CA; B trusts it at once through the CA's
 * NOTIFY (migration 0036), not at its periodic refresh (set to an hour here).
 */
describe.each(availableDrivers())('a device CA created by another process is trusted at once on %s', (driver) => {
  let f: ChannelFixture;
  let b: DeviceChannelServer;
  beforeAll(async () => {
    f = await startChannelFixture(driver);
    ({ server: b } = await startDeviceChannelService({
      db: f.t.store.db,
      dataDir: f.dataDir,
      keys: f.repo.wrappedKeys,
      addr: '127.0.0.1:0',
      repository: f.repo,
      log: { error: (obj, msg) => console.error(msg, obj) },
      trustRefreshMs: 3_600_000,
      listen: f.t.store.listen,
    }));
  });
  afterAll(async () => {
    await b?.close(100);
    await f?.dispose();
  });

  it('a device of a new tenant, enrolled through A, is served by B within a second or two', async () => {
    const tenant = await createTenant(f.t.store.db, 'notify-tenant');
    const key = await newDeviceKey();
    const anon = clientsFor(f.addr, channelCredentials(f.serverCaPem));
    const res = await unary<EnrollResponse>(async (cb) =>
      anon.enrollment.enroll(
        { token: await f.newToken({ tenantId: tenant }), deviceName: 'notified', csrDer: await csrFor(key, 'notified'), inventory: undefined },
        cb,
      ),
    ).finally(() => anon.close());
    expect(res.tenantId).toBe(tenant);
    const identity = { keyPem: key.keyPem, certPem: encodePem(res.certificateDer, 'CERTIFICATE') };
    const started = Date.now();
    let last: string | undefined;
    // a fresh connection per try: the trust store applies to new TLS handshakes
    for (;;) {
      const c = clientsFor(`127.0.0.1:${b.port}`, channelCredentials(f.serverCaPem, identity));
      try {
        await unary<object>((cb) => c.device.ping({}, cb));
        break;
      } catch (e) {
        last = (e as ServiceError).details;
      } finally {
        c.close();
      }
      if (Date.now() - started > 5000) throw new Error(`B still refuses the device after 5 s: ${last}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(Date.now() - started).toBeLessThan(5000);
  });
});
