import 'reflect-metadata';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../../src/auth/secrets.js';
import { deviceScope } from '../../src/device-channel/device-scope.js';
import { EnrollmentBatcher } from '../../src/device-channel/enroll-batch.js';
import { enroll } from '../../src/device-channel/enrollment-service.js';
import type { Enrollment } from '../../src/resources/devices/commands.js';
import { createTenant } from '../../src/resources/tenants/queries.js';
import { csrFor, newDeviceKey, startChannelFixture, type ChannelFixture } from '../fixtures/device-channel.js';
import { availableDrivers } from '../helpers/store.js';

/**
 * The enrollment group commit (device-channel/enroll-batch.ts) driven directly: every
 * enrollment submitted in one tick, so they form one batch (the batcher starts at the next
 * turn of the event loop), written with one multi-row statement per table.
 * The certificates here are log entries only (their signing is covered through gRPC in
 * device-channel/enroll.test.ts); what is checked is what the batch writes and refuses.
 */
describe.each(availableDrivers())('enrollment batches on %s', (driver) => {
  let f: ChannelFixture;
  let batcher: EnrollmentBatcher;
  beforeAll(async () => {
    f = await startChannelFixture(driver);
    batcher = new EnrollmentBatcher(f.t.store.db);
  });
  afterAll(async () => {
    await f?.dispose();
  });

  let serial = 0;
  const enrollment = (token: string, name: string): Enrollment => {
    serial += 1;
    const hex = serial.toString(16).padStart(32, '0');
    return {
      token,
      name,
      profile: 'linux-arm64',
      agentVersion: '1.0.0',
      certificate: { serial: hex, fingerprint: `sha256:${hex.padStart(64, '0')}`, notAfter: new Date(Date.now() + 86_400_000) },
    };
  };
  /** Submits all at once (one tick), each at its own clock; settles in submission order. */
  const submitAll = (items: { tenant?: string; at?: Date; e: Enrollment }[]) =>
    Promise.allSettled(
      items.map((i, n) =>
        batcher.submit(deviceScope(f.ctx, { tenantId: i.tenant ?? f.tenantId, deviceName: i.e.name }, i.at ?? new Date(Date.now() + n)), i.e),
      ),
    );
  const uses = async (token: string) =>
    (await f.t.store.db.selectFrom('enroll_tokens').select('uses').where('secret_hash', '=', hashSecret(token)).executeTakeFirstOrThrow()).uses;
  /** The transaction and the statement (command id) that wrote each device row. */
  const writers = async (prefix: string) =>
    (
      await sql<{
        name: string;
        xmin: string;
        cmin: string;
      }>`SELECT name, xmin::text AS xmin, cmin::text AS cmin FROM devices WHERE name LIKE ${`${prefix}%`} ORDER BY name`.execute(f.t.store.db)
    ).rows;
  const reasons = (results: PromiseSettledResult<void>[]) =>
    results.map((r) => (r.status === 'fulfilled' ? 'ok' : `${(r.reason as { code: string }).code}: ${(r.reason as Error).message}`));

  it('a batch writes each table with one statement; each enrollment keeps its own audit row, actor and clock', async () => {
    const db = f.t.store.db;
    const token = await f.newToken({ maxUses: 9 });
    const names = Array.from({ length: 9 }, (_, i) => `eb-one-${i}`);
    const base = Date.now();
    const at = names.map((_, i) => new Date(base + i * 1000));
    const items = names.map((n, i) => ({ e: enrollment(token, n), at: at[i]! }));
    expect(reasons(await submitAll(items))).toEqual(names.map(() => 'ok'));
    expect(await uses(token)).toBe(9);

    // all nine together: one transaction, one statement for their rows
    const w = await writers('eb-one-');
    expect(w).toHaveLength(9);
    expect(new Set(w.map((r) => r.xmin)).size).toBe(1);
    expect(new Set(w.map((r) => r.cmin)).size).toBe(1);

    const devices = await db
      .selectFrom('devices')
      .select(['name', 'status', 'cert_fingerprint', 'last_seen'])
      .where('name', 'like', 'eb-one-%')
      .orderBy('name')
      .execute();
    expect(devices.map((d) => [d.name, d.status, d.cert_fingerprint, d.last_seen?.getTime()])).toEqual(
      items.map((i, n) => [i.e.name, 'online', i.e.certificate.fingerprint, at[n]!.getTime()]),
    );
    const tokenId = (await db.selectFrom('enroll_tokens').select('id').where('secret_hash', '=', hashSecret(token)).executeTakeFirstOrThrow()).id;
    const audit = await db
      .selectFrom('audit_events')
      .select(['actor', 'credential', 'target', 'at', 'detail', 'tenant_id'])
      .where('action', '=', 'device.enroll')
      .where('target', 'like', 'device:eb-one-%')
      .orderBy('target')
      .execute();
    expect(
      audit.map((a) => {
        const detail = (typeof a.detail === 'string' ? JSON.parse(a.detail) : a.detail) as Record<string, unknown>;
        return [a.actor, a.credential, a.target, a.at.getTime(), a.tenant_id, detail.enroll_token_id, detail.cert_fingerprint];
      }),
    ).toEqual(items.map((i, n) => [`device:${i.e.name}`, 'device', `device:${i.e.name}`, at[n]!.getTime(), f.tenantId, tokenId, i.e.certificate.fingerprint]));
    const history = await db
      .selectFrom('device_history')
      .innerJoin('devices', 'devices.id', 'device_history.device_id')
      .select(['devices.name', 'device_history.event', 'device_history.at'])
      .where('devices.name', 'like', 'eb-one-%')
      .orderBy('devices.name')
      .execute();
    expect(history.map((h) => [h.name, h.event, h.at.getTime()])).toEqual(names.map((n, i) => [n, 'enrolled', at[i]!.getTime()]));
    const certs = await db
      .selectFrom('device_certificates')
      .select(['device_name', 'reason', 'issued_at'])
      .where('device_name', 'like', 'eb-one-%')
      .orderBy('device_name')
      .execute();
    expect(certs.map((c) => [c.device_name, c.reason, c.issued_at.getTime()])).toEqual(names.map((n, i) => [n, 'enroll', at[i]!.getTime()]));
  });

  it('a token with fewer uses left than its enrollments in a batch: exactly max_uses enroll, the rest are refused as before; another token in the same batch is not affected', async () => {
    const db = f.t.store.db;
    const short = await f.newToken({ maxUses: 4 });
    const other = await f.newToken({ maxUses: 10 });
    const items = [
      { e: enrollment(short, 'eb-short-0') },
      ...Array.from({ length: 6 }, (_, i) => [{ e: enrollment(short, `eb-short-${i + 1}`) }, { e: enrollment(other, `eb-other-${i}`) }]).flat(),
    ];
    const results = reasons(await submitAll(items));
    // in arrival order: the first four of the short token, then refusals
    expect(results.filter((_, i) => items[i]!.e.token === short)).toEqual([
      'ok',
      'ok',
      'ok',
      'ok',
      'ENROLL_TOKEN_EXHAUSTED: enrollment token: all 4 uses spent',
      'ENROLL_TOKEN_EXHAUSTED: enrollment token: all 4 uses spent',
      'ENROLL_TOKEN_EXHAUSTED: enrollment token: all 4 uses spent',
    ]);
    expect(results.filter((_, i) => items[i]!.e.token === other)).toEqual(Array.from({ length: 6 }, () => 'ok'));
    expect(await uses(short)).toBe(4);
    expect(await uses(other)).toBe(6);
    expect((await db.selectFrom('devices').select('name').where('name', 'like', 'eb-short-%').orderBy('name').execute()).map((d) => d.name)).toEqual([
      'eb-short-0',
      'eb-short-1',
      'eb-short-2',
      'eb-short-3',
    ]);
    for (const refused of ['eb-short-4', 'eb-short-5', 'eb-short-6']) {
      expect(await db.selectFrom('device_certificates').select('id').where('device_name', '=', refused).execute()).toEqual([]);
      expect(await db.selectFrom('audit_events').select('id').where('target', '=', `device:${refused}`).execute()).toEqual([]);
    }
    expect(
      await db.selectFrom('audit_events').select('id').where('action', '=', 'device.enroll').where('target', 'like', 'device:eb-other-%').execute(),
    ).toHaveLength(6);
  });

  it('an expired token and a token of another tenant refuse their enrollments alone', async () => {
    const db = f.t.store.db;
    const good = await f.newToken({ maxUses: 5 });
    const expiring = await f.newToken({ maxUses: 5, expiresAt: new Date(Date.now() + 60_000) });
    const otherTenant = await createTenant(db, 'eb-other-tenant');
    const foreign = await f.newToken({ maxUses: 5, tenantId: otherTenant });
    const later = new Date(Date.now() + 120_000);
    const items = [
      { e: enrollment(good, 'eb-mix-0') },
      { e: enrollment(good, 'eb-mix-1') },
      // read as usable earlier, expired by the time of this enrollment's clock
      { e: enrollment(expiring, 'eb-mix-2'), at: later },
      { e: enrollment(good, 'eb-mix-3') },
      // checked for this tenant, a token of another
      { e: enrollment(foreign, 'eb-mix-4') },
      { e: enrollment(good, 'eb-mix-5') },
    ];
    expect(reasons(await submitAll(items))).toEqual([
      'ok',
      'ok',
      'ENROLL_TOKEN_EXPIRED: enrollment token: expired',
      'ok',
      'ENROLL_TOKEN_INVALID: enrollment token: unknown',
      'ok',
    ]);
    expect([await uses(good), await uses(expiring), await uses(foreign)]).toEqual([4, 0, 0]);
    expect((await db.selectFrom('devices').select('name').where('name', 'like', 'eb-mix-%').orderBy('name').execute()).map((d) => d.name)).toEqual([
      'eb-mix-0',
      'eb-mix-1',
      'eb-mix-3',
      'eb-mix-5',
    ]);
  });

  it('the same device twice in one burst: the second enrollment waits for the next batch and re-enrolls it', async () => {
    const db = f.t.store.db;
    const token = await f.newToken({ maxUses: 6 });
    const first = enrollment(token, 'eb-twice');
    const second = enrollment(token, 'eb-twice');
    const items = [
      { e: enrollment(token, 'eb-twice-a') },
      { e: first },
      { e: enrollment(token, 'eb-twice-b') },
      { e: second },
      { e: enrollment(token, 'eb-twice-c') },
    ];
    expect(reasons(await submitAll(items))).toEqual(['ok', 'ok', 'ok', 'ok', 'ok']);
    expect(await uses(token)).toBe(5);
    const device = await db.selectFrom('devices').select(['cert_fingerprint']).where('name', '=', 'eb-twice').executeTakeFirstOrThrow();
    expect(device.cert_fingerprint).toBe(second.certificate.fingerprint);
    expect(await db.selectFrom('device_certificates').select('reason').where('device_name', '=', 'eb-twice').execute()).toEqual([
      { reason: 'enroll' },
      { reason: 'enroll' },
    ]);
    expect(await db.selectFrom('audit_events').select('id').where('target', '=', 'device:eb-twice').execute()).toHaveLength(2);
    // the first with the other three in one batch, the second in the batch after
    const w = await writers('eb-twice');
    const xmin = (name: string) => w.find((r) => r.name === name)!.xmin;
    expect(new Set([xmin('eb-twice-a'), xmin('eb-twice-b'), xmin('eb-twice-c')]).size).toBe(1);
    expect(xmin('eb-twice')).not.toBe(xmin('eb-twice-a'));
  });

  it('Enroll calls arriving together share their token check: each gets the answer of its own token', async () => {
    const db = f.t.store.db;
    const good = await f.newToken({ maxUses: 3 });
    const expired = await f.newToken({ maxUses: 3, expiresAt: new Date(Date.now() - 1000) });
    const unknown = `svce_00000000_${'A'.repeat(43)}`;
    const tokens = [good, unknown, good, expired, good, unknown, expired];
    const names = tokens.map((_, i) => `eb-check-${i}`);
    const csrs = await Promise.all(names.map(async (n) => csrFor(await newDeviceKey(), n)));
    const results = await Promise.allSettled(names.map((n, i) => enroll(f.ctx, { token: tokens[i]!, deviceName: n, csrDer: csrs[i]!, inventory: undefined })));
    expect(
      results.map((r) => (r.status === 'fulfilled' ? `ok ${r.value.deviceName}` : `${(r.reason as { code: string }).code}: ${(r.reason as Error).message}`)),
    ).toEqual([
      'ok eb-check-0',
      'ENROLL_TOKEN_INVALID: enrollment token: unknown',
      'ok eb-check-2',
      'ENROLL_TOKEN_EXPIRED: enrollment token: expired',
      'ok eb-check-4',
      'ENROLL_TOKEN_INVALID: enrollment token: unknown',
      'ENROLL_TOKEN_EXPIRED: enrollment token: expired',
    ]);
    expect([await uses(good), await uses(expired)]).toEqual([3, 0]);
    expect((await db.selectFrom('devices').select('name').where('name', 'like', 'eb-check-%').orderBy('name').execute()).map((d) => d.name)).toEqual([
      'eb-check-0',
      'eb-check-2',
      'eb-check-4',
    ]);
  });
});
