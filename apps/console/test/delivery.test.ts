import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ADMIN, Fleet, waitFor, waitForProgress } from '@svc/e2e';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireTool } from '../../../vitest.shared.js';
import { hasChromium, launch, logIn, screenshot, seriousViolations } from './helpers/browser';

const MiB = 1024 * 1024;
const DEVICE = 'gw-0001';

interface DeliveryView {
  deltas: { queued: number; building: number; ready: number };
  deliveries_total: number;
  deliveries: { device: string; method: string; bytes_transferred: number }[];
}

/**
 * The operator's view of how bytes reached the devices, in Chromium, against a real server and
 * a real agent process: version 1 of a 4 MiB model is installed in full, version 2 (2% of its
 * blocks changed) through the delta the server builds; the rollout page's Delivery section
 * shows the per-path counts, the bytes transferred against the full size and the bytes saved,
 * and the device page shows the last delivery of its member.
 */
describe.skipIf(!hasChromium() || !requireTool('zstd', 'zstd'))('delivery in the console', () => {
  let root: string;
  let fleet: Fleet;
  let browser: Browser;
  let page: Page;
  const at = (path: string) => `${fleet.server.url}${path}`;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-console-delivery-'));
    [fleet, browser] = await Promise.all([Fleet.start({ root, devices: [DEVICE] }), launch()]);
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    await logIn(page, fleet.server.url, ADMIN.email, ADMIN.password, '/');
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await fleet?.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('shows a rollout delivered through a delta (paths, bytes, saved) and the device’s last delivery', async () => {
    const v1 = randomBytes(4 * MiB);
    const v2 = Buffer.from(v1);
    const blocks = v1.length / 4096;
    for (let i = 0; i < blocks * 0.02; i++) randomBytes(4096).copy(v2, Math.floor((i * blocks) / (blocks * 0.02)) * 4096);
    const group = await fleet.createGroup('field', [DEVICE]);
    const probes = [
      { name: 'model-present', type: 'command' as const, command: ['/bin/sh', '-c', 'test -s "$SVC_AGENT_DATA_DIR/placed/model/detector"'], timeout_s: 10 },
    ];
    const a1 = await fleet.api.uploadArtifact({ name: 'detector', version: '1.0.0', kind: 'model', filename: 'detector.onnx', bytes: v1 });
    const r1 = await fleet.signAndSubmit({ version: '1.0.0', components: [{ name: 'detector', artifact: a1 }], orderedGroups: [['detector']], group, probes });
    const ro1 = await fleet.startRollout(r1.release.id);
    expect(await fleet.waitSettled(ro1.transaction_id!)).toMatchObject({ state: 'committed' });

    // version 2, its one wave waiting for the operator until the delta is built
    const a2 = await fleet.api.uploadArtifact({ name: 'detector', version: '2.0.0', kind: 'model', filename: 'detector.onnx', bytes: v2 });
    const r2 = await fleet.signAndSubmit({
      version: '2.0.0',
      components: [{ name: 'detector', artifact: a2 }],
      orderedGroups: [['detector']],
      group,
      probes,
      waves: [{ count: 1, requires_approval: true }],
    });
    const ro2 = await fleet.startRollout(r2.release.id);
    await waitForProgress<DeliveryView>('the delta to be built', async () => {
      const d = await fleet.api.get<DeliveryView>(`/rollouts/${ro2.id}/delivery`);
      return d.deltas.queued + d.deltas.building === 0 ? { done: d } : { progress: d.deltas };
    });
    await fleet.api.json('POST', `/rollouts/${ro2.id}/approve`, undefined, 200);
    expect(await fleet.waitSettled(ro2.transaction_id!)).toMatchObject({ state: 'committed' });
    const reported = await waitFor(
      'the delivery report',
      async () => (await fleet.api.get<DeliveryView>(`/rollouts/${ro2.id}/delivery`)).deliveries.find((d) => d.device === DEVICE),
      120_000,
    );
    expect(reported.method).toBe('delta');
    const sentShare = `${((reported.bytes_transferred / v2.length) * 100).toFixed(1)}%`;
    const savedShare = `${(((v2.length - reported.bytes_transferred) / v2.length) * 100).toFixed(1)}%`;

    // the rollout page: one member through the delta, a fraction of the full size, the rest saved
    await page.goto(at(`/rollouts/${ro2.id}`));
    const section = page.getByRole('region', { name: 'Delivery' });
    await section.getByText(`${sentShare} of the full size`).waitFor();
    await expect(section.getByText(`(${savedShare})`).count()).resolves.toBe(1);
    const rows = await section.getByRole('table', { name: 'Delivered members per path' }).getByRole('row').allInnerTexts();
    expect(rows.slice(1).map((r) => r.split('\t')[0]!.trim())).toEqual(['delta']);
    await section.getByText('Deltas asked for at the start: 1 (1 ready').waitFor();
    await screenshot(page, 'delivery-rollout');
    expect(await seriousViolations(page)).toEqual([]);

    // the first rollout went in full: nothing saved
    await page.goto(at(`/rollouts/${ro1.id}`));
    const first = page.getByRole('region', { name: 'Delivery' });
    await first.getByText('100.0% of the full size').waitFor();
    await first.getByText('No delta was asked for at the start.').waitFor();

    // the device page: its member's last delivery, through the delta, linked to its rollout
    await page.goto(at(`/devices/${DEVICE}`));
    const device = page.getByRole('region', { name: 'Delivery' });
    const table = device.getByRole('table', { name: 'The last delivery of each member' });
    await table.waitFor();
    const cells = (await table.getByRole('row').nth(1).allInnerTexts())[0]!.split('\t').map((c) => c.trim());
    expect(cells.slice(0, 2)).toEqual(['detector', 'delta']);
    expect(cells[2]).toContain(`(${sentShare})`);
    await expect(table.getByRole('link', { name: 'detector' }).getAttribute('href')).resolves.toBe(`/rollouts/${ro2.id}`);
    await screenshot(page, 'delivery-device');
    expect(await seriousViolations(page)).toEqual([]);
  });
});
