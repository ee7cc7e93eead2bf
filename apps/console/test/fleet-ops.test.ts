/**
 * The operator's daily fleet work in Chromium against a real server and a simulated fleet
 * (apps/agent's simulator, each device enrolled over mTLS with its own key): a dynamic group
 * made from a filter that follows the fleet when refreshed; bulk actions on ticked devices and
 * on everything a filter selects, run as background jobs whose progress and per-device
 * outcomes the page shows; a decommission that needs the count typed out; tags edited on the
 * device page. Every state axe-checked; screenshots saved (docs/console.md shows some).
 */
import { startSim } from '@svc/e2e';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clickForAnswer, hasChromium, launch, logIn, screenshot, seriousViolations } from './helpers/browser';
import { ADMIN, startConsoleServer, type ConsoleServer } from './helpers/server';

const N = 12;
const name = (i: number) => `gw-${String(i).padStart(6, '0')}`;

interface Device {
  name: string;
  status: string;
  tags: string[];
}

describe.skipIf(!hasChromium())('fleet operations in Chromium: dynamic groups, bulk actions, tags', () => {
  let s: ConsoleServer;
  let browser: Browser;
  beforeAll(async () => {
    [s, browser] = await Promise.all([startConsoleServer(), launch()]);
    const { token } = await s.api<{ token: string }>('POST', '/enroll-tokens', { name: 'ops', max_uses: N }, 201);
    const sim = await startSim({ deviceAddr: s.server.deviceAddr, serverCaFile: s.server.serverCaFile, token, devices: N, prefix: 'gw', concurrency: 3 });
    expect(sim.names).toEqual(Array.from({ length: N }, (_, i) => name(i)));
    // the devices are enrolled; nothing here needs them checking in
    await sim.stop();
    for (let i = 0; i < 6; i++) await s.api('PUT', `/devices/${name(i)}/tags/eu`);
    await s.api('POST', '/groups', { name: 'lab', members: [] }, 201);
  });
  afterAll(async () => {
    await browser?.close();
    await s?.stop();
  });

  async function session(email: string = ADMIN.email, password: string = ADMIN.password, path = '/'): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    await logIn(page, s.url, email, password, path);
    return { context, page };
  }
  const device = (n: string) => s.api<Device>('GET', `/devices/${n}`);

  /** Waits on the job page until the server says the job is done; bound by the job's own progress (each poll is an answer). */
  async function jobFinished(page: Page, total: number) {
    await page.waitForURL(/\/bulk-jobs\/[0-9a-f-]{36}$/);
    const status = page.getByRole('status').filter({ hasText: `of ${total} processed` });
    await status.filter({ hasText: 'Finished.' }).waitFor({ timeout: 120_000 });
    return status.textContent();
  }

  it('a dynamic group made from a filter: a bad filter is refused at its column, the members follow the fleet on refresh', async () => {
    const { context, page } = await session(ADMIN.email, ADMIN.password, '/groups');
    await page.getByLabel('Group name').fill('eu-gateways');
    await page.getByLabel('Kind').selectOption('dynamic');
    const filter = page.getByLabel('Device filter');
    await filter.fill('tags has');
    expect((await clickForAnswer(page, page.getByRole('button', { name: 'Create group' }), /^\/api\/v1\/groups$/)).status()).toBe(400);
    await page.getByRole('alert').filter({ hasText: 'Column 9: expected a value' }).waitFor();
    expect(await filter.getAttribute('aria-invalid')).toBe('true');
    expect(await seriousViolations(page)).toEqual([]);
    await filter.fill('tags has "eu"');
    expect((await clickForAnswer(page, page.getByRole('button', { name: 'Create group' }), /^\/api\/v1\/groups$/)).status()).toBe(201);
    await page.getByRole('status').filter({ hasText: 'Created eu-gateways with the 6 devices its filter selects.' }).waitFor();
    // the form empties after the create
    expect(await page.getByLabel('Group name').inputValue()).toBe('');
    await page.getByRole('row', { name: /eu-gateways dynamic 6/ }).waitFor();
    await page.getByRole('link', { name: 'eu-gateways' }).first().click();
    await page.getByRole('heading', { level: 1, name: 'Group eu-gateways' }).waitFor();
    await page.getByText('Members are the devices this filter selects').waitFor();
    // a dynamic group's members are not edited by hand
    expect(await page.getByRole('group', { name: 'Add members' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: /^Remove / }).count()).toBe(0);
    const members = page.locator('ul.columns li');
    expect(await members.allTextContents()).toEqual(Array.from({ length: 6 }, (_, i) => name(i)));
    // the fleet moves: one more device tagged, one untagged
    await s.api('PUT', `/devices/${name(7)}/tags/eu`);
    await s.api('DELETE', `/devices/${name(0)}/tags/eu`);
    expect((await clickForAnswer(page, page.getByRole('button', { name: 'Refresh membership' }), /\/refresh$/)).status()).toBe(200);
    await page.getByRole('status').filter({ hasText: 'Refreshed: 1 added, 1 removed.' }).waitFor();
    await page.locator('ul.columns li', { hasText: name(7) }).waitFor();
    expect(await members.allTextContents()).toEqual([1, 2, 3, 4, 5, 7].map(name));
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'ops-dynamic-group');
    // the link shows the devices it selects now, through the same filter on the device list
    await page.getByRole('link', { name: 'devices it selects now' }).click();
    await page.getByText(/^6 matching/).waitFor();
    await context.close();
  });

  it('bulk actions: all a filter selects added to a static group, ticked devices tagged and asked for logs; progress and each outcome shown', async () => {
    const { context, page } = await session(ADMIN.email, ADMIN.password, '/devices');
    const box = page.getByLabel('Filter', { exact: true });
    await box.fill('tags has "eu"');
    await box.press('Enter');
    await page.getByText(/^6 matching/).waitFor();
    const bulk = page.getByRole('group', { name: 'Bulk action' });
    // nothing ticked: the action covers what the filter selects
    expect(await bulk.getByLabel('All 6 devices matching the filter').isChecked()).toBe(true);
    expect(await bulk.getByLabel('The 0 ticked devices').isDisabled()).toBe(true);
    await bulk.getByLabel('Action').selectOption('group.add');
    const submit = bulk.getByRole('button', { name: 'Add to a static group: 6 devices' });
    expect(await submit.isDisabled()).toBe(true);
    await bulk.getByText('Choose a static group.').waitFor();
    await bulk.getByLabel('Static group').selectOption({ label: 'lab' });
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'ops-bulk-form');
    expect((await clickForAnswer(page, submit, /^\/api\/v1\/device-bulk-jobs$/)).status()).toBe(202);
    expect(await jobFinished(page, 6)).toContain('6 of 6 processed: 6 done (changed or already so), 0 failed. Finished.');
    await page.getByRole('heading', { level: 1, name: 'Bulk add to group of 6 devices' }).waitFor();
    await page.getByRole('link', { name: 'group lab' }).waitFor();
    await expect.poll(() => page.locator('tbody tr .badge').allTextContents()).toEqual(Array(6).fill('succeeded'));
    expect(await page.getByRole('progressbar', { name: 'Devices processed' }).getAttribute('value')).toBe('6');
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'ops-bulk-job');
    const lab = await s.api<{ members: string[] }>(
      'GET',
      `/groups/${(await s.api<{ groups: { id: string; name: string }[] }>('GET', '/groups')).groups.find((g) => g.name === 'lab')!.id}`,
    );
    expect(lab.members).toEqual([1, 2, 3, 4, 5, 7].map(name));

    // ticked devices across the unfiltered list: a tag
    await page.goto(`${s.url}/devices`);
    await page.getByText(/^12 matching/).waitFor();
    await page.getByLabel(`Tick ${name(10)}`).check();
    await page.getByLabel(`Tick ${name(11)}`).check();
    // the unfiltered fleet is not offered whole; the reason says why
    expect(await bulk.getByLabel('All 12 devices matching the filter').isDisabled()).toBe(true);
    await bulk.getByText('apply a filter, a status or a name search first').waitFor();
    expect(await bulk.getByLabel('The 2 ticked devices').isChecked()).toBe(true);
    await bulk.getByLabel('Action').selectOption('tag');
    await bulk.getByLabel('Tag').fill('pilot');
    expect((await clickForAnswer(page, bulk.getByRole('button', { name: 'Tag: 2 devices' }), /^\/api\/v1\/device-bulk-jobs$/)).status()).toBe(202);
    expect(await jobFinished(page, 2)).toContain('2 of 2 processed: 2 done');
    expect((await device(name(10))).tags).toEqual(['pilot']);
    expect((await device(name(11))).tags).toEqual(['pilot']);

    // logs from one ticked device: its outcome names the request, with the download beside it
    await page.goto(`${s.url}/devices?q=${name(3)}`);
    await page.getByText(/^1 matching/).waitFor();
    await page.getByLabel(`Tick ${name(3)}`).check();
    await bulk.getByLabel('Action').selectOption('logs');
    expect((await clickForAnswer(page, bulk.getByRole('button', { name: 'Request logs: 1 device' }), /^\/api\/v1\/device-bulk-jobs$/)).status()).toBe(202);
    await jobFinished(page, 1);
    await page.getByRole('link', { name: `Logs of ${name(3)}, once uploaded` }).waitFor();
    expect(await page.locator('tbody tr td').nth(2).textContent()).toMatch(/^log request [0-9a-f]{8}…/);
    expect(await seriousViolations(page)).toEqual([]);
    await context.close();
  });

  it('bulk decommission needs the count typed out; the outcomes list a device that was already decommissioned as unchanged', async () => {
    await s.api('DELETE', `/devices/${name(11)}`, undefined, 204);
    const { context, page } = await session(ADMIN.email, ADMIN.password, '/devices');
    await page.getByLabel('Filter', { exact: true }).fill('tags has "pilot"');
    await page.getByLabel('Filter', { exact: true }).press('Enter');
    await page.getByText(/^2 matching/).waitFor();
    const bulk = page.getByRole('group', { name: 'Bulk action' });
    await bulk.getByLabel('Action').selectOption('decommission');
    const submit = bulk.getByRole('button', { name: 'Decommission: 2 devices' });
    const typed = bulk.getByLabel('Type "decommission 2" to confirm');
    expect(await submit.isDisabled()).toBe(true);
    expect(await submit.getAttribute('title')).toBe('Type "decommission 2" to confirm.');
    await typed.fill('decommission 3');
    expect(await submit.isDisabled()).toBe(true);
    await typed.fill('decommission 2');
    expect(await submit.isDisabled()).toBe(false);
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'ops-bulk-decommission-confirm');
    expect((await clickForAnswer(page, submit, /^\/api\/v1\/device-bulk-jobs$/)).status()).toBe(202);
    expect(await jobFinished(page, 2)).toContain('2 of 2 processed: 2 done');
    await page.getByLabel('Outcome', { exact: true }).selectOption('unchanged');
    // the old page stays while the filtered one loads: wait for the server's answer to show
    await expect.poll(() => page.locator('tbody tr').allTextContents()).toEqual([expect.stringMatching(new RegExp(`^${name(11)}unchanged`))]);
    expect((await device(name(10))).status).toBe('decommissioned');
    await context.close();
  });

  it('tags on the device page: added, refused in the server words, removed; a viewer sees the controls disabled with the reason', async () => {
    const { context, page } = await session(ADMIN.email, ADMIN.password, `/devices/${name(4)}`);
    await page.getByRole('heading', { level: 1, name: `Device ${name(4)}` }).waitFor();
    const tags = page.getByRole('list', { name: 'Tags' });
    await expect.poll(() => tags.locator('.badge').allTextContents()).toEqual(['eu']);
    await page.getByLabel('New tag').fill('rack-7');
    expect((await clickForAnswer(page, page.getByRole('button', { name: 'Add tag' }), /\/tags\/rack-7$/, 'PUT')).status()).toBe(200);
    await tags.locator('.badge', { hasText: 'rack-7' }).waitFor();
    expect(await page.getByLabel('New tag').inputValue()).toBe('');
    await page.getByLabel('New tag').fill('Bad Tag');
    expect((await clickForAnswer(page, page.getByRole('button', { name: 'Add tag' }), /\/tags\//, 'PUT')).status()).toBe(400);
    await page.getByRole('alert').filter({ hasText: 'tag: must match' }).waitFor();
    expect((await clickForAnswer(page, page.getByRole('button', { name: 'Remove tag eu' }), /\/tags\/eu$/, 'DELETE')).status()).toBe(200);
    await expect.poll(() => tags.locator('.badge').allTextContents()).toEqual(['rack-7']);
    // the refusal of the earlier add is gone once a later change went through
    expect(await page.getByRole('alert').count()).toBe(0);
    expect((await device(name(4))).tags).toEqual(['rack-7']);
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'ops-device-tags');
    await context.close();

    const viewer = await s.user('viewer');
    const v = await session(viewer.email, viewer.password, `/devices/${name(4)}`);
    const reason = 'Your role (viewer) lacks the permission devices.write.';
    await v.page.getByText(reason).first().waitFor();
    expect(await v.page.getByRole('button', { name: 'Add tag' }).isDisabled()).toBe(true);
    expect(await v.page.getByRole('button', { name: 'Remove tag rack-7' }).count()).toBe(0);
    await v.page.goto(`${s.url}/devices`);
    await v.page.getByText(/^12 matching/).waitFor();
    const bulk = v.page.getByRole('group', { name: 'Bulk action' });
    await bulk.getByText(reason).waitFor();
    for (const b of await bulk.getByRole('button').all()) expect(await b.isDisabled()).toBe(true);
    expect(await v.page.getByLabel(`Tick ${name(1)}`).count()).toBe(0);
    expect(await seriousViolations(v.page)).toEqual([]);
    await v.context.close();
  });
});
