import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { arch, release, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ADMIN, Fleet, PRODUCT, readTar, releasePayload, svcRelease, waitForProgress, type ArtifactRecord, type GroupRecord } from '@svc/e2e';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clickForAnswer, hasChromium, launch, logIn, screenshot, seriousViolations } from './helpers/browser';

/**
 * The release manager's whole flow in the console, in Chromium, against a real server and
 * real agent processes: enrollment token -> a device enrolls with it and appears -> artifacts
 * uploaded -> group -> a release signed with svc-release, verified in the browser, submitted
 * -> rollout started -> the gated wave approved -> the transaction commits -> receipts
 * downloaded; then a device's logs fetched and a device decommissioned.
 */
describe.skipIf(!hasChromium())('main flow in the console', () => {
  let root: string;
  let fleet: Fleet;
  let browser: Browser;
  let page: Page;
  const at = (path: string) => `${fleet.server.url}${path}`;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-console-flow-'));
    [fleet, browser] = await Promise.all([Fleet.start({ root, devices: ['gw-0001', 'gw-0002'] }), launch()]);
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
    page = await context.newPage();
    await logIn(page, fleet.server.url, ADMIN.email, ADMIN.password, '/');
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await fleet?.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });

  /** Reloads until `text` shows (for lists that are not polled). */
  async function untilVisible(text: string | RegExp, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if ((await page.getByText(text).count()) > 0) return;
      if (Date.now() > deadline) throw new Error(`${String(text)} did not appear on ${page.url()}`);
      await page.waitForTimeout(500);
      await page.reload();
      await page.getByRole('heading', { level: 1 }).waitFor();
    }
  }

  it('an enrollment token made in the console enrolls a device, which then appears', async () => {
    await page.goto(at('/enroll-tokens'));
    await page.getByLabel('Name').fill('line-b');
    await page.getByLabel('Maximum uses').fill('1');
    await page.getByRole('button', { name: 'Create token' }).click();
    const token = await page.getByRole('textbox', { name: 'Enrollment token line-b' }).inputValue();
    expect(token).toMatch(/^svce?_?/);
    await screenshot(page, 'flow-enroll-token');
    await fleet.startAgent('gw-0003', { token });
    await page.goto(at('/devices?q=gw-0003'));
    await untilVisible(/^1 matching/);
    await page.getByRole('link', { name: 'gw-0003' }).waitFor();
    await untilVisible('online');
    await page.goto(at('/'));
    await page.getByText('3', { exact: true }).first().waitFor();
    await screenshot(page, 'flow-dashboard');
  });

  const artifacts: ArtifactRecord[] = [];
  it('artifacts upload with a progress bar', async () => {
    await page.goto(at('/artifacts'));
    for (const a of [
      { name: 'gateway-config', version: '1.4.0', kind: 'config', file: 'gateway.toml', bytes: Buffer.from('[uplink]\nhost = "telemetry.example"\n') },
      { name: 'anomaly-model', version: '2.1.0', kind: 'model', file: 'anomaly.onnx', bytes: Buffer.from('onnx-weights:'.repeat(40_000)) },
    ]) {
      const form = page.getByRole('group', { name: 'Upload an artifact' });
      await form.getByLabel('Name').fill(a.name);
      await form.getByLabel('Version').fill(a.version);
      await form.getByLabel('Kind').selectOption(a.kind);
      await form.getByLabel('File').setInputFiles({ name: a.file, mimeType: 'application/octet-stream', buffer: a.bytes });
      // the request is held back a moment so the progress bar can be seen before the answer
      await page.route('**/api/v1/artifacts', (route) => void setTimeout(() => void route.continue(), 700));
      const answered = clickForAnswer(page, form.getByRole('button', { name: 'Upload' }), /^\/api\/v1\/artifacts$/);
      await page.getByRole('progressbar').waitFor();
      expect(await page.getByText(/Upload progress/).count()).toBe(1);
      await answered;
      await page.getByText(`Published ${a.name} ${a.version}`).waitFor();
      await page.unroute('**/api/v1/artifacts');
      expect(await page.getByRole('progressbar').count()).toBe(0);
      const listed = await fleet.api.get<{ artifacts: ArtifactRecord[] }>(`/artifacts?q=${a.name}`);
      artifacts.push(listed.artifacts.find((x) => x.version === a.version)!);
    }
    await page.getByRole('cell', { name: 'anomaly-model' }).first().waitFor();
    await screenshot(page, 'flow-artifacts');
  });

  let group: GroupRecord;
  it('a group is made and its members found by search', async () => {
    await page.goto(at('/groups'));
    await page.getByLabel('Group name').fill('field-gateways');
    await page.getByRole('button', { name: 'Create group' }).click();
    await page.getByRole('link', { name: 'field-gateways' }).first().click();
    await page.getByRole('heading', { level: 1, name: 'Group field-gateways' }).waitFor();
    await page.getByLabel('Find devices by name').fill('gw-');
    for (const d of ['gw-0001', 'gw-0002', 'gw-0003']) {
      await page.getByRole('button', { name: `Add ${d}` }).click();
      await page.getByRole('button', { name: `${d} is a member` }).waitFor();
    }
    await screenshot(page, 'flow-group');
    const id = new URL(page.url()).pathname.split('/').pop()!;
    group = await fleet.api.get<GroupRecord>(`/groups/${id}`);
    expect(group.members).toEqual(['gw-0001', 'gw-0002', 'gw-0003']);
  });

  let envelopeFile: string;
  it('a release signed with svc-release is verified in the browser, then submitted', async () => {
    const dir = join(root, 'release');
    await mkdir(dir, { recursive: true });
    const payloadFile = join(dir, 'release.json');
    envelopeFile = join(dir, 'release.dsse.json');
    const [config, model] = artifacts;
    await writeFile(
      payloadFile,
      JSON.stringify(
        releasePayload({
          tenant: fleet.tenant,
          product: PRODUCT,
          version: '2026.1.0',
          components: [
            { name: 'gateway-config', artifact: config! },
            { name: 'anomaly-model', artifact: model! },
          ],
          orderedGroups: [['gateway-config'], ['anomaly-model']],
          group,
          probes: [
            {
              name: 'config-present',
              type: 'command',
              command: ['/bin/sh', '-c', 'test -s "$SVC_AGENT_DATA_DIR/placed/config/gateway-config"'],
              timeout_s: 10,
            },
          ],
          waves: [
            { name: 'canary', count: 1 },
            { name: 'fleet', count: 3, requires_approval: true },
          ],
        }),
      ),
    );
    const signed = await svcRelease(['sign', payloadFile, '--key', `${fleet.customerKeyPrefix}.key`, '--out', envelopeFile]);
    expect(signed.status, signed.stderr).toBe(0);

    await page.goto(at('/releases'));
    await page.getByLabel('Choose an envelope file').setInputFiles(envelopeFile);
    await page.getByRole('heading', { name: 'Payload of release.dsse.json' }).waitFor();
    expect(await page.getByLabel('Expected product').inputValue()).toBe(PRODUCT);
    // a wrong expectation is refused by the browser's own verification
    await page.getByLabel('Expected product').fill('another-product');
    await page.getByRole('button', { name: 'Verify in this browser' }).click();
    await page.getByText(/Does not verify: PRODUCT_MISMATCH/).waitFor();
    expect(await page.getByRole('button', { name: 'Submit release' }).isDisabled()).toBe(true);
    await page.getByLabel('Expected product').fill(PRODUCT);
    await page.getByRole('button', { name: 'Verify in this browser' }).click();
    await page.getByText(/^Verified: signed by authorizer key/).waitFor();
    await screenshot(page, 'flow-release-verified');
    expect(await seriousViolations(page)).toEqual([]);
    await clickForAnswer(page, page.getByRole('button', { name: 'Submit release' }), /^\/api\/v1\/releases$/);
    await page.getByText(/Release edge-gw 2026\.1\.0 published as TUF target/).waitFor();
    const envelope = JSON.parse(await readFile(envelopeFile, 'utf8')) as { payload: string };
    expect(envelope.payload.length).toBeGreaterThan(0);
  });

  let txId: string;
  it('a rollout starts from the release, waits at the gated wave, and is approved', async () => {
    // the release list offers the rollout too; the status line's link leads to the same form
    await page.getByRole('link', { name: 'Roll out edge-gw 2026.1.0' }).waitFor();
    await page.getByRole('link', { name: 'Start a rollout' }).click();
    await page.getByRole('heading', { level: 1, name: 'Rollouts' }).waitFor();
    await expect.poll(() => page.getByLabel('Release').inputValue()).not.toBe('');
    await page.getByRole('button', { name: 'Start rollout' }).click();
    await page.waitForURL(/\/rollouts\/[0-9a-f-]{36}$/);
    await page.getByText('awaiting approval').first().waitFor({ timeout: 60_000 });
    await screenshot(page, 'flow-rollout-gated');
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByRole('button', { name: 'Approve next wave…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Approve' }).click();
    await page.getByText('completed').first().waitFor({ timeout: 60_000 });
    // the rollout names what it rolls out; its timeline tells the story in words
    const title = (await page.getByRole('heading', { level: 1 }).textContent())!;
    expect(title).toMatch(/^Rollout of edge-gw 2026\.1\.0 to \S+$/);
    const timeline = page.getByRole('region', { name: 'Timeline' });
    await timeline.getByText(/Started a signed rollout to 3 devices/).waitFor();
    await timeline.getByText(/Approved the next wave/).waitFor();
    await timeline.getByText('Wave 1 went from open to done').waitFor();
    await page.getByRole('region', { name: 'Failures by reason' }).getByText('No device has failed or rolled back.').waitFor();
    await screenshot(page, 'flow-rollout-timeline');
    expect(await seriousViolations(page)).toEqual([]);
    // the transaction id is shortened, whole on hover, and copied by its button
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
    await page.getByRole('button', { name: 'Copy transaction id' }).click();
    await page.getByText('Copied').waitFor();
    txId = await page.evaluate(() => navigator.clipboard.readText());
    expect(await page.locator(`abbr[title="${txId}"]`).count()).toBe(1);
    await page.getByRole('link', { name: 'Transaction of edge-gw 2026.1.0' }).click();
    expect(page.url()).toMatch(new RegExp(`/transactions/${txId}$`));
  });

  it('the transaction view shows the commit and the result manifest; receipts download', async () => {
    await page.getByRole('heading', { level: 1, name: 'Release transaction' }).waitFor();
    await page.getByText('committed').first().waitFor({ timeout: 60_000 });
    for (const d of ['gw-0001', 'gw-0002', 'gw-0003']) await page.getByRole('cell', { name: d }).first().waitFor();
    await page
      .getByText(/gateway-config #\d+ \S+, anomaly-model #\d+/)
      .first()
      .waitFor();
    await screenshot(page, 'flow-transaction');
    expect(await seriousViolations(page)).toEqual([]);
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: 'Download receipts of this transaction (.tar)' }).click(),
    ]);
    const file = join(root, 'receipts.tar');
    await download.saveAs(file);
    const entries = readTar(await readFile(file));
    const index = entries
      .find((e) => e.name === 'index.jsonl')!
      .bytes.toString('utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { device: string; transaction_id?: string });
    expect(index.map((l) => l.device).sort()).toEqual(['gw-0001', 'gw-0002', 'gw-0003']);
    expect(entries.filter((e) => e.name.startsWith('receipts/'))).toHaveLength(3);
    expect(txId).toMatch(/^[0-9a-f-]{36}$/);
    // the same receipts one at a time, with the key label, and one opened with its verification
    for (const d of ['gw-0001', 'gw-0002', 'gw-0003']) await page.getByRole('link', { name: `Receipt of ${d}` }).waitFor();
    expect(await page.getByRole('cell', { name: 'software-key', exact: true }).count()).toBe(3);
    await page.getByRole('link', { name: 'Receipt of gw-0002' }).click();
    await page.getByRole('heading', { level: 1, name: 'Receipt of gw-0002' }).waitFor();
    await page.getByText('Signature verified').waitFor();
    await page.getByText(/software-key \(the device key is held in software/).waitFor();
    await screenshot(page, 'flow-receipt');
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('a rollout whose devices fail for two reasons: failures grouped by reason with the devices linked, pauses and resumes in the timeline, failed counts on the wave bars', async () => {
    // gw-0001's health probe fails once the new member is live, so it rolls back; gw-0002
    // cannot stage the member (a directory sits where its file is copied), so it fails before
    // activating; gw-0003 commits. No failure is allowed: each one pauses its wave.
    const probeFails = join(fleet.dataDir('gw-0001'), 'probe-fails');
    const stageBlocker = join(fleet.dataDir('gw-0002'), 'placed', 'config', 'uplink-config.svc-new.tmp');
    await writeFile(probeFails, '');
    await mkdir(join(stageBlocker, 'in-the-way'), { recursive: true });
    const uplink = await fleet.api.uploadArtifact({
      name: 'uplink-config',
      version: '1.0.0',
      kind: 'config',
      filename: 'uplink.toml',
      bytes: Buffer.from('[uplink]\nretries = 3\n'),
    });
    const payload = releasePayload({
      tenant: fleet.tenant,
      product: PRODUCT,
      version: '2026.2.0',
      components: [{ name: 'uplink-config', artifact: uplink }],
      orderedGroups: [['uplink-config']],
      group,
      probes: [{ name: 'uplink-healthy', type: 'command', command: ['/bin/sh', '-c', 'test ! -e "$SVC_AGENT_DATA_DIR/probe-fails"'], timeout_s: 10 }],
      waves: [
        { name: 'canary', count: 1 },
        { name: 'fleet', count: 3 },
      ],
    });
    (payload.rollout as Record<string, unknown>).failure_threshold = { count: 0 };
    const dir = join(root, 'release-2026.2.0');
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'release.json'), JSON.stringify(payload));
    const signed = await svcRelease(['sign', join(dir, 'release.json'), '--key', `${fleet.customerKeyPrefix}.key`, '--out', join(dir, 'release.dsse.json')]);
    expect(signed.status, signed.stderr).toBe(0);
    const envelope = JSON.parse(await readFile(join(dir, 'release.dsse.json'), 'utf8')) as unknown;
    const release = await fleet.api.json<{ id: string }>('POST', '/releases', { envelope, expected_product: PRODUCT }, 201);
    const rollout = await fleet.startRollout(release.id);
    await page.goto(at(`/rollouts/${rollout.id}`));
    await page.getByRole('heading', { level: 1, name: /^Rollout of edge-gw 2026\.2\.0 to field-gateways$/ }).waitFor();

    // the operator resumes each pause from the console until the rollout completes; a pause is
    // resumed once the timeline shows it (pauses and resumes alternate, so the k-th resume
    // waits for the k-th pause)
    const status = page.locator('dl.facts dd[aria-live="polite"]');
    const timeline = page.getByRole('region', { name: 'Timeline' });
    const pauses = timeline.getByText(/Wave \d went from open to paused: its failures went over the threshold/);
    let resumed = 0;
    for (;;) {
      const next = await waitForProgress(
        `rollout ${rollout.id} to pause or complete`,
        async () => {
          const st = (await status.textContent())?.trim();
          const paused = await pauses.count();
          if (st === 'completed') return { done: 'completed' };
          if (st === 'paused' && paused > resumed) return { done: 'paused' };
          return { progress: [st, paused, await timeline.getByRole('listitem').count()] };
        },
        60_000,
      );
      if (next === 'completed') break;
      if (resumed === 0) {
        await screenshot(page, 'flow-rollout-paused');
        expect(await seriousViolations(page)).toEqual([]);
      }
      await page.getByRole('button', { name: 'Resume…' }).click();
      const answer = await clickForAnswer(page, page.getByRole('dialog').getByRole('button', { name: 'Resume' }), /\/resume$/);
      expect(answer.status()).toBe(200);
      resumed += 1;
    }
    // a failure pauses its wave: the canary's wave, or the later wave once or twice (its two
    // failures may arrive before or after the first resume); each pause was resumed
    expect(resumed).toBeGreaterThanOrEqual(1);

    // failures by reason, most frequent first then by name, each with its devices linked
    const failures = page.getByRole('region', { name: 'Failures by reason' });
    await expect
      .poll(() => failures.getByRole('row').allInnerTexts())
      .toEqual(['Reason\tDevices\tFirst devices', 'failed, health not-checked\t1\tgw-0002', 'rolled-back, health unhealthy\t1\tgw-0001']);
    for (const d of ['gw-0001', 'gw-0002']) expect(await failures.getByRole('link', { name: d }).getAttribute('href')).toBe(`/devices/${d}`);
    expect(await failures.getByRole('link', { name: 'gw-0003' }).count()).toBe(0);

    // the timeline: the start, each pause the failures caused and the resume that followed
    await timeline.getByText('Started a signed rollout to 3 devices').waitFor();
    expect(await pauses.count()).toBe(resumed);
    expect(await timeline.getByText(/Resumed the rollout; it is /).count()).toBe(resumed);
    // each resume moved its paused wave on (a row of its own, as a result's wave change is)
    expect(await timeline.getByText(/Wave \d went from paused to (open|done)/).count()).toBe(resumed);
    // the last wave ends by the last result or by the resume that accepts it
    expect(await timeline.getByRole('listitem').last().innerText()).toMatch(/Wave 1 went from \w+ to done|Resumed the rollout; it is completed/);

    // each wave's bar counts its failed devices, as the server does
    const detail = await fleet.api.get<{ waves: { index: number; size: number; done: number; failed: number }[] }>(`/rollouts/${rollout.id}`);
    expect(detail.waves.map((w) => [w.size, w.done])).toEqual([
      [1, 1],
      [2, 2],
    ]);
    expect(detail.waves.reduce((n, w) => n + w.failed, 0)).toBe(2);
    const waves = page.getByRole('region', { name: 'Waves' });
    for (const w of detail.waves) {
      const row = waves.locator('tbody tr').nth(w.index);
      expect(await row.getByRole('cell').first().innerText()).toBe(String(w.index));
      expect(await row.getByRole('cell').last().innerText()).toBe(`${w.done} of ${w.size} done${w.failed > 0 ? `, ${w.failed} failed` : ''}`);
    }

    // per device: a rolled-back device is marked as a failure, like a failed one
    const devices = page.getByRole('region', { name: 'Devices' });
    const stateOf = (d: string) =>
      devices
        .getByRole('row')
        .filter({ has: page.getByRole('link', { name: d }) })
        .locator('.badge');
    expect(await Promise.all(['gw-0001', 'gw-0002', 'gw-0003'].map((d) => stateOf(d).innerText()))).toEqual(['rolled back', 'failed', 'committed']);
    const colour = (d: string) => stateOf(d).evaluate((e) => getComputedStyle(e).backgroundColor);
    expect(await colour('gw-0001')).toBe(await colour('gw-0002'));
    expect(await colour('gw-0001')).not.toBe(await colour('gw-0003'));
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'flow-rollout-failures');

    // a failing device's link leads to its page
    await failures.getByRole('link', { name: 'gw-0002' }).click();
    await page.getByRole('heading', { level: 1, name: 'Device gw-0002' }).waitFor();
    await rm(probeFails);
    await rm(stageBlocker, { recursive: true });
  });

  it('the device list sorts by a column header (the server orders; the URL keeps the order)', async () => {
    await page.goto(at('/devices'));
    // the name cell's link (an operator's list has a tick column first)
    const names = () => page.locator('tbody tr td a').allTextContents();
    // the first rows, however long a busy machine takes to load them; then the order
    await page.locator('tbody tr td a').first().waitFor();
    await expect.poll(names).toEqual(['gw-0001', 'gw-0002', 'gw-0003']);
    expect(await page.getByRole('columnheader', { name: /^Name/ }).getAttribute('aria-sort')).toBe('ascending');
    await page.getByRole('button', { name: /^Name/ }).click();
    await page.waitForURL((u) => u.searchParams.get('sort') === '-name');
    await expect.poll(names).toEqual(['gw-0003', 'gw-0002', 'gw-0001']);
    expect(await page.getByRole('columnheader', { name: /^Name/ }).getAttribute('aria-sort')).toBe('descending');
    // the agents check in every second, so the order by last seen moves: compare with the answer the page got
    const [answer] = await Promise.all([
      page.waitForResponse((r) => {
        const url = new URL(r.url());
        return url.pathname === '/api/v1/devices' && url.searchParams.get('sort') === 'last_seen';
      }),
      page.getByRole('button', { name: /^Last seen/ }).click(),
    ]);
    await page.waitForURL((u) => u.searchParams.get('sort') === 'last_seen');
    const bySeen = ((await answer.json()) as { devices: { name: string }[] }).devices.map((d) => d.name);
    expect([...bySeen].sort()).toEqual(['gw-0001', 'gw-0002', 'gw-0003']);
    await expect.poll(names).toEqual(bySeen);
    expect(await page.getByRole('columnheader', { name: /^Last seen/ }).getAttribute('aria-sort')).toBe('ascending');
    expect(await page.getByRole('columnheader', { name: /^Name/ }).getAttribute('aria-sort')).toBeNull();
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'flow-devices-sorted');
  });

  it('a device page: its reported inventory (and the list filtered by it), current release with member digests, history, a log request that arrives and downloads, decommission after confirmation', async () => {
    await page.goto(at('/devices/gw-0001'));
    await page.getByRole('heading', { level: 1, name: 'Device gw-0001' }).waitFor();
    // what it runs, by the word of its signed receipt
    const current = page.getByRole('region', { name: 'Current release' });
    await current.getByRole('link', { name: `${PRODUCT} 2026.1.0` }).waitFor();
    await current.getByText(/device-signed receipt \(key label software-key\)/).waitFor();
    for (const a of artifacts) {
      const row = current.getByRole('row').filter({ hasText: a.name }).first();
      expect(await row.getByRole('cell').nth(1).locator('code').textContent(), a.name).toBe(a.digest);
    }
    // the inventory the agent reported at enrollment, one row per attribute
    const inventory = page.getByRole('region', { name: 'Inventory' });
    const attr = (key: string) => inventory.getByRole('row').filter({ has: page.getByText(key, { exact: true }) });
    expect(await attr('attributes.arch').getByRole('cell').nth(1).textContent()).toBe(arch());
    expect(await attr('attributes.kernel').getByRole('cell').nth(1).textContent()).toBe(release());
    expect(await attr('attributes.agent_version').count()).toBe(1);
    // no feed is imported here: the device's open findings list is empty, read from the server
    await page.getByRole('region', { name: 'Open findings' }).getByText('No findings').waitFor();
    await page.getByRole('heading', { name: 'History' }).waitFor();
    const response = await clickForAnswer(page, page.getByRole('button', { name: 'Request logs' }), /^\/api\/v1\/devices\/gw-0001\/log-requests$/);
    expect(response.status()).toBe(202);
    expect((await response.json()) as { status: string }).toMatchObject({ status: 'pending' });
    // the agent answers at its next check-in (every second here) with a gzip log bundle
    await page.getByRole('link', { name: 'Download logs' }).waitFor({ timeout: 30_000 });
    await page.getByText('Logs arrived.').waitFor();
    const [logs] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download logs' }).click()]);
    const logFile = join(root, 'logs');
    await logs.saveAs(logFile);
    const bundle = await readFile(logFile);
    expect([...bundle.subarray(0, 2)]).toEqual([0x1f, 0x8b]);
    await screenshot(page, 'flow-device');
    expect(await seriousViolations(page)).toEqual([]);

    // the device list filtered by a reported attribute: every agent here runs on this machine
    await page.goto(at('/devices'));
    const filter = page.getByLabel('Filter', { exact: true });
    await filter.fill(`attributes.arch = "${arch()}" and attributes.kernel = "${release()}"`);
    await filter.press('Enter');
    await page.getByText(/^3 matching/).waitFor();
    await filter.fill('attributes.arch = "no-such-arch"');
    await filter.press('Enter');
    await page.getByText(/^0 matching/).waitFor();

    await page.goto(at('/devices/gw-0003'));
    await page.getByRole('button', { name: 'Decommission…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Decommission' }).click();
    await page.getByText('Decommissioned.').waitFor();
    await page.getByText('decommissioned', { exact: true }).first().waitFor();
    const device = await fleet.api.get<{ status: string }>('/devices/gw-0003');
    expect(device.status).toBe('decommissioned');
  });

  let inService: GroupRecord;
  it('a legacy rollout starts with waves from the form, keeps its group from being deleted, and is aborted after confirmation', async () => {
    // gw-0003 was decommissioned above: the rollout goes to the devices still in service (a
    // wave waits for every member it holds, and a decommissioned one never reports)
    inService = await fleet.api.json<GroupRecord>('POST', '/groups', { name: 'gateways-in-service', members: ['gw-0001', 'gw-0002'] });
    await page.goto(at('/rollouts'));
    await page.getByLabel('Rollout kind').selectOption('legacy');
    await expect.poll(async () => (await page.getByLabel('Artifact').locator('option').count()) > 1).toBe(true);
    await page.getByLabel('Artifact').selectOption({ label: 'gateway-config 1.4.0 (config)' });
    await expect.poll(async () => (await page.getByLabel('Group').locator('option').count()) > 1).toBe(true);
    await page.getByLabel('Group').selectOption({ label: 'gateways-in-service (2)' });
    await page.getByLabel('Waves').fill('1, 2!');
    await page.getByRole('button', { name: 'Start rollout' }).click();
    await Promise.race([
      page.waitForURL(/\/rollouts\/[0-9a-f-]{36}$/),
      page
        .getByRole('alert')
        .waitFor()
        .then(async () => expect.fail((await page.getByRole('alert').textContent()) ?? 'alert')),
    ]);
    await page.getByText('device-reported results only (no device signature)').waitFor();
    await page.getByText('awaiting approval').first().waitFor({ timeout: 60_000 });
    const rolloutUrl = page.url();
    const running = new URL(rolloutUrl).pathname.split('/').pop()!;
    // its group cannot be deleted while it runs: the refusal names the rollout
    await page.goto(at(`/groups/${inService.id}`));
    await page.getByRole('button', { name: 'Delete group…' }).click();
    const refused = await clickForAnswer(
      page,
      page.getByRole('dialog').getByRole('button', { name: 'Delete group' }),
      /^\/api\/v1\/groups\/[0-9a-f-]+$/,
      'DELETE',
    );
    expect(refused.status()).toBe(409);
    await page.getByRole('alert').filter({ hasText: running }).waitFor();
    await page.goto(rolloutUrl);
    await page.getByRole('button', { name: 'Abort…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Abort rollout' }).click();
    await page.getByText('aborted').first().waitFor();
    expect(await page.getByRole('button', { name: 'Abort…' }).isDisabled()).toBe(true);
    const id = new URL(page.url()).pathname.split('/').pop()!;
    expect(await fleet.api.get<{ status: string; kind: string }>(`/rollouts/${id}`)).toMatchObject({ status: 'aborted', kind: 'legacy' });
    await screenshot(page, 'flow-legacy-aborted');
  });

  it('a member is removed from a group, and the group (its rollout aborted) is deleted after confirmation', async () => {
    await page.goto(at(`/groups/${inService.id}`));
    await page.getByRole('heading', { level: 1, name: 'Group gateways-in-service' }).waitFor();
    const removed = await clickForAnswer(page, page.getByRole('button', { name: 'Remove gw-0002' }), /\/members\/remove$/);
    expect(removed.status()).toBe(200);
    await page.getByRole('button', { name: 'Remove gw-0002' }).waitFor({ state: 'detached' });
    expect((await fleet.api.get<GroupRecord>(`/groups/${inService.id}`)).members).toEqual(['gw-0001']);
    await page.getByRole('button', { name: 'Delete group…' }).click();
    await screenshot(page, 'flow-group-delete-confirm');
    const deleted = await clickForAnswer(
      page,
      page.getByRole('dialog').getByRole('button', { name: 'Delete group' }),
      /^\/api\/v1\/groups\/[0-9a-f-]+$/,
      'DELETE',
    );
    expect(deleted.status()).toBe(204);
    await page.waitForURL((u) => u.pathname === '/groups');
    await page.getByText('Group gateways-in-service deleted.').waitFor();
    expect(await page.getByRole('link', { name: 'gateways-in-service' }).count()).toBe(0);
    expect(await seriousViolations(page)).toEqual([]);
  });
});
