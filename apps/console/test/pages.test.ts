import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PAGES } from '../src/pages';
import { clickForAnswer, hasChromium, launch, logIn, screenshot, seriousViolations } from './helpers/browser';
import { ADMIN, startConsoleServer, type ConsoleServer } from './helpers/server';

describe.skipIf(!hasChromium())('the console in Chromium against a real server', () => {
  let s: ConsoleServer;
  let browser: Browser;
  beforeAll(async () => {
    [s, browser] = await Promise.all([startConsoleServer(), launch()]);
    dir = await mkdtemp(join(tmpdir(), 'svc-console-pages-'));
    // something on most pages
    await s.api('POST', '/enroll-tokens', { name: 'line-a', max_uses: 5 }, 201);
    await s.api('POST', '/groups', { name: 'field-gateways', members: [] }, 201);
    const form = new FormData();
    for (const [k, v] of Object.entries({ name: 'gateway-config', version: '1.0.0', kind: 'config' })) form.set(k, v);
    form.set('file', new Blob(['[uplink]\nhost = "t.example"\n']), 'gateway.toml');
    const up = await fetch(`${s.url}/api/v1/artifacts`, { method: 'POST', headers: s.admin, body: form });
    expect(up.status).toBe(201);
  });
  afterAll(async () => {
    await browser?.close();
    await s?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });
  let dir: string;

  async function session(email: string, password: string, path = '/'): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const page = await context.newPage();
    await logIn(page, s.url, email, password, path);
    return { context, page };
  }

  it('the login page has no serious accessibility violation', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${s.url}/login`);
    await page.getByRole('heading', { name: 'svc console' }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'login');
    await context.close();
  });

  it('the device filter box: a refused filter is shown with its column and a caret, the URL keeps the filter; axe clean', async () => {
    const { context, page } = await session(ADMIN.email, ADMIN.password, '/devices');
    await page.getByRole('heading', { level: 1, name: 'Devices' }).waitFor();
    const box = page.getByLabel('Filter', { exact: true });
    await box.fill('tags has');
    const refused = page.waitForResponse((r) => new URL(r.url()).pathname === '/api/v1/devices' && r.status() === 400);
    await box.press('Enter');
    await refused;
    const alert = page.getByRole('alert').filter({ hasText: 'Column 9' });
    await alert.waitFor();
    expect(await alert.textContent()).toContain('Column 9: expected a value ("text" or a number) after has, found the end');
    expect(await alert.locator('pre').textContent()).toBe('tags has\n        ^');
    expect(new URL(page.url()).searchParams.get('filter')).toBe('tags has');
    expect(await box.getAttribute('aria-invalid')).toBe('true');
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'devices-filter-error');
    await box.fill('tags has "eu" and agent_version < "2.4.0"');
    const answered = page.waitForResponse((r) => new URL(r.url()).pathname === '/api/v1/devices' && r.status() === 200);
    await box.press('Enter');
    await answered;
    await page.getByText(/^0 matching/).waitFor();
    expect(await page.getByRole('alert').filter({ hasText: 'Column' }).count()).toBe(0);
    expect(await seriousViolations(page)).toEqual([]);
    await context.close();
  });

  it('every page loads with its heading and no serious or critical axe violation (screenshots saved)', async () => {
    const { context, page } = await session(ADMIN.email, ADMIN.password);
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    for (const [path, heading] of PAGES) {
      await page.goto(`${s.url}${path}`);
      await page.getByRole('heading', { level: 1, name: heading }).waitFor();
      await page.waitForLoadState('networkidle');
      expect(
        await page
          .getByRole('status')
          .filter({ hasText: /^Loading/ })
          .count(),
        path,
      ).toBe(0);
      expect(await page.getByRole('alert').allTextContents(), path).toEqual([]);
      expect(await seriousViolations(page), path).toEqual([]);
      await screenshot(page, `admin${path}`);
    }
    expect(errors).toEqual([]);
    await context.close();
  });

  it('a 401 goes to the login page and back to the page asked for', async () => {
    const { context, page } = await session(ADMIN.email, ADMIN.password, '/devices');
    expect(new URL(page.url()).pathname).toBe('/devices');
    await page.getByRole('heading', { level: 1, name: 'Devices' }).waitFor();
    // the session ends elsewhere (logout through the API with this browser's cookie)
    const cookie = (await context.cookies()).find((c) => c.name === 'svc_session')!;
    const out = await fetch(`${s.url}/api/v1/auth/logout`, { method: 'POST', headers: { cookie: `svc_session=${cookie.value}`, 'x-svc-csrf': '1' } });
    expect(out.status).toBe(204);
    await page.getByLabel('Status').selectOption('offline');
    await page.waitForURL(/\/login\?next=%2Fdevices%3Fstatus%3Doffline/);
    await page.getByLabel('Email').fill(ADMIN.email);
    await page.getByLabel('Password').fill(ADMIN.password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.waitForURL((u) => u.pathname === '/devices' && u.search === '?status=offline');
    await context.close();
  });

  it('a wrong password is said in words on the login page', async () => {
    const page = await browser.newPage();
    await page.goto(`${s.url}/login`);
    await page.getByLabel('Email').fill(ADMIN.email);
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Log in' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toContain('email or password is incorrect');
    await page.close();
  });

  it('a viewer sees read-only controls, disabled with the reason', async () => {
    const viewer = await s.user('viewer');
    const { context, page } = await session(viewer.email, viewer.password, '/enroll-tokens');
    const reason = 'Your role (viewer) lacks the permission enroll-tokens.write.';
    await page.getByText(reason).waitFor();
    expect(await page.getByRole('group', { name: 'New token' }).evaluate((f) => (f as HTMLFieldSetElement).disabled)).toBe(true);
    expect(await page.getByRole('button', { name: 'Create token' }).isDisabled()).toBe(true);
    expect(await page.getByRole('button', { name: 'Delete line-a' }).isDisabled()).toBe(true);
    await screenshot(page, 'viewer-enroll-tokens');
    for (const [path, perm] of [
      ['/artifacts', 'artifacts.write'],
      ['/groups', 'groups.write'],
      ['/releases', 'releases.write'],
      ['/rollouts', 'rollouts.write'],
      ['/admin/users', 'users.manage'],
      ['/admin/api-keys', 'api-keys.manage'],
      ['/admin/branding', 'admin.manage'],
      ['/cases', 'evidence.write'],
      ['/vuln-feeds', 'admin.manage'],
    ] as const) {
      await page.goto(`${s.url}${path}`);
      await page.getByText(`Your role (viewer) lacks the permission ${perm}.`).first().waitFor();
      const buttons = page.locator('fieldset.guard').first().getByRole('button');
      for (const b of await buttons.all()) expect(await b.isDisabled(), `${path}: ${await b.textContent()}`).toBe(true);
      expect(await seriousViolations(page), path).toEqual([]);
      await screenshot(page, `viewer${path}`);
    }
    await context.close();
  });

  it('an enrollment token shows its status, and the form empties after a create (no twin on a second click)', async () => {
    const { context, page } = await session(ADMIN.email, ADMIN.password, '/enroll-tokens');
    await page.getByLabel('Name').fill('line-c');
    await page.getByLabel('Maximum uses').fill('3');
    const made = await clickForAnswer(page, page.getByRole('button', { name: 'Create token' }), /^\/api\/v1\/enroll-tokens$/);
    expect(made.status()).toBe(201);
    await page.getByRole('textbox', { name: 'Enrollment token line-c' }).waitFor();
    const row = page.getByRole('row').filter({ has: page.getByRole('cell', { name: 'line-c', exact: true }) });
    await row.getByText('active', { exact: true }).waitFor();
    expect(await page.getByLabel('Name').inputValue()).toBe('');
    expect(await page.getByLabel('Maximum uses').inputValue()).toBe('10');
    // a second click with the emptied form sends nothing: the name is required
    let posted = 0;
    page.on('request', (r) => {
      if (r.method() === 'POST' && new URL(r.url()).pathname === '/api/v1/enroll-tokens') posted++;
    });
    await page.getByRole('button', { name: 'Create token' }).click();
    expect(await page.getByLabel('Name').evaluate((el) => (el as HTMLInputElement).validity.valueMissing)).toBe(true);
    expect(posted).toBe(0);
    const listed = await s.api<{ enroll_tokens: { name: string; status: string }[] }>('GET', '/enroll-tokens');
    expect(listed.enroll_tokens.filter((x) => x.name === 'line-c').map((x) => x.status)).toEqual(['active']);
    await context.close();
  });

  it("a user's role is changed from its selector; the last admin's selector and the admin's own delete say why they are disabled", async () => {
    const op = await s.user('operator');
    const { context, page } = await session(ADMIN.email, ADMIN.password, '/admin/users');
    const mine = page.getByRole('combobox', { name: `Role of ${ADMIN.email}` });
    await mine.waitFor();
    expect(await mine.isDisabled()).toBe(true);
    expect(await mine.getAttribute('title')).toBe('The last admin cannot be demoted: make another user admin first.');
    expect(await page.getByRole('button', { name: `Delete ${ADMIN.email}` }).getAttribute('aria-describedby')).toBeTruthy();
    const theirs = page.getByRole('combobox', { name: `Role of ${op.email}` });
    const [changed] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'PATCH' && /^\/api\/v1\/users\/[0-9a-f-]+$/.test(new URL(r.url()).pathname), { timeout: 0 }),
      theirs.selectOption('admin'),
    ]);
    expect(changed.status()).toBe(200);
    await page.getByText(`${op.email} is now admin.`).waitFor();
    // two admins now: the caller's own selector is enabled
    await page.getByRole('combobox', { name: `Role of ${ADMIN.email}`, disabled: false }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'admin-users-role');
    await s.api(
      'PATCH',
      `/users/${(await s.api<{ users: { id: string; email: string }[] }>('GET', '/users?limit=200')).users.find((u) => u.email === op.email)!.id}`,
      { role: 'operator' },
      204,
    );
    await context.close();
  });

  it('works by keyboard: skip link, navigation, a confirmation dialog that Escape cancels', async () => {
    const { context, page } = await session(ADMIN.email, ADMIN.password, '/');
    await page.getByRole('heading', { level: 1, name: 'Fleet' }).waitFor();
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    await page.keyboard.press('Enter');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('main');
    // from the top again: the navigation is reachable with Tab and follows with Enter
    await page.goto(`${s.url}/`);
    await page.getByRole('heading', { level: 1, name: 'Fleet' }).waitFor();
    let reached = false;
    for (let i = 0; i < 12 && !reached; i++) {
      await page.keyboard.press('Tab');
      reached = (await page.evaluate(() => document.activeElement?.textContent)) === 'Enrollment tokens';
    }
    expect(reached).toBe(true);
    await page.keyboard.press('Enter');
    await page.waitForURL((u) => u.pathname === '/enroll-tokens');
    await page.getByRole('button', { name: 'Delete line-a' }).focus();
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Cancel');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect(await page.getByRole('cell', { name: 'line-a', exact: true }).count()).toBe(1);
    await context.close();
  });

  it('security: httpOnly SameSite=Strict cookie, CSRF header required, CSP blocks inline script, no secret in storage', async () => {
    const { context, page } = await session(ADMIN.email, ADMIN.password, '/admin/api-keys');
    const cookies = await context.cookies();
    expect(cookies.map((c) => [c.name, c.httpOnly, c.sameSite])).toEqual([['svc_session', true, 'Strict']]);
    expect(await page.evaluate(() => document.cookie)).not.toContain('svc_session');

    // the console's own writes carry the header; a write without it is refused
    const forged = await page.evaluate(async () => {
      const res = await fetch('/api/v1/enroll-tokens', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'forged' }),
      });
      return { status: res.status, body: (await res.json()) as { error: string } };
    });
    expect(forged).toEqual({ status: 403, body: { error: 'csrf: a write with the session cookie needs the header x-svc-csrf: 1' } });

    const response = await page.goto(`${s.url}/admin/api-keys`);
    const csp = response!.headers()['content-security-policy']!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    const violations: string[] = [];
    page.on('console', (m) => violations.push(m.text()));
    const ran = await page.evaluate(() => {
      const el = document.createElement('script');
      el.textContent = 'window.__inlineRan = true';
      document.body.append(el);
      return (window as { __inlineRan?: boolean }).__inlineRan === true;
    });
    expect(ran).toBe(false);
    expect(violations.join('\n')).toMatch(/Content Security Policy/);

    // an API key made in the console is shown once and kept nowhere in the browser
    await page.getByLabel('Key name').fill('ci');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = await page.getByRole('textbox', { name: 'API key ci' }).inputValue();
    expect(secret).toMatch(/^svck_/);
    const stored = await page.evaluate(() => JSON.stringify({ local: { ...localStorage }, session: { ...sessionStorage } }));
    expect(stored).toBe('{"local":{},"session":{}}');
    expect(await page.evaluate(() => document.cookie)).not.toContain(secret);
    await page.reload();
    await page.getByRole('cell', { name: 'ci', exact: true }).waitFor();
    expect(await page.getByRole('textbox', { name: 'API key ci' }).count()).toBe(0);
    await context.close();
  });

  it('a description is edited; an SBOM is attached and downloaded, filters by severity, a bad one is refused in words; the audit trail exports', async () => {
    const { context, page } = await session(ADMIN.email, ADMIN.password, '/artifacts');
    const attach = page.getByLabel(/^Attach SBOM of gateway-config 1\.0\.0/);
    await attach.setInputFiles({
      name: 'bad.json',
      mimeType: 'application/json',
      buffer: Buffer.from(JSON.stringify({ bomFormat: 'SPDXish', specVersion: '1.5' })),
    });
    await expect(page.getByRole('alert').textContent()).resolves.toContain('bomFormat: must be "CycloneDX"');
    const bom = JSON.stringify({
      bomFormat: 'CycloneDX',
      specVersion: '1.5',
      components: [],
      vulnerabilities: [{ id: 'CVE-1', ratings: [{ severity: 'critical' }] }],
    });
    await attach.setInputFiles({ name: 'bom.json', mimeType: 'application/json', buffer: Buffer.from(bom) });
    const link = page.getByRole('link', { name: 'Download' });
    await link.waitFor();
    const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
    const file = join(dir, 'bom.json');
    await download.saveAs(file);
    expect(await readFile(file, 'utf8')).toBe(bom);
    await page.getByRole('button', { name: 'Edit description of gateway-config 1.0.0' }).click();
    await page.getByLabel('Description of gateway-config 1.0.0').fill('uplink settings for line A');
    await page.getByRole('button', { name: 'Save' }).click();
    // the form closes once the server answered (while it is open, its input's value alone
    // names the cell)
    await page.getByLabel('Description of gateway-config 1.0.0').waitFor({ state: 'detached' });
    await page.getByRole('cell', { name: /uplink settings for line A/ }).waitFor();
    expect((await s.api<{ artifacts: { description: string | null }[] }>('GET', '/artifacts')).artifacts[0]!.description).toBe('uplink settings for line A');
    // the filter is on findings the service matched from imported feeds (none here), not on
    // severities typed into the SBOM: at or above low, nothing; any severity, the artifact again
    await page.getByLabel('Open finding at or above').selectOption('low');
    await page.getByText('No artifacts').waitFor();
    await page.getByLabel('Open finding at or above').selectOption('');
    await page.getByText('1–1 of 1 artifacts').waitFor();

    await page.goto(`${s.url}/admin/audit?action=artifact.sbom.attach`);
    await page.getByRole('cell', { name: 'artifact.sbom.attach' }).first().waitFor();
    const [exported] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Export (JSON Lines)' }).click()]);
    const lines = join(dir, 'audit.jsonl');
    await exported.saveAs(lines);
    const events = (await readFile(lines, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { action: string });
    expect(events.length).toBeGreaterThan(0);
    expect(new Set(events.map((e) => e.action))).toEqual(new Set(['artifact.sbom.attach']));
    // the trail reads in words; the raw detail is one click away
    await page
      .getByText(/^Attached a cyclonedx SBOM \(sha256:[0-9a-f]{8}/)
      .first()
      .waitFor();
    await page.getByText('Raw detail').first().click();
    await page
      .getByText(/"format":\s*"cyclonedx"/)
      .first()
      .waitFor();
    // the artifact page leads to the artifact's VEX
    await page.goto(`${s.url}/artifacts`);
    await page.getByRole('link', { name: 'VEX of gateway-config 1.0.0' }).click();
    await page.getByRole('heading', { level: 1, name: 'VEX statements' }).waitFor();
    await context.close();
  });

  it('administration: a user made in the console changes their password on the profile page; branding previews live, then brands the header', async () => {
    const { context, page } = await session(ADMIN.email, ADMIN.password, '/admin/users');
    await page.getByLabel('Email').fill('new-operator@console.test');
    await page.getByLabel('Initial password').fill('first-password-1');
    await page.getByLabel('Role', { exact: true }).selectOption('operator');
    await page.getByRole('button', { name: 'Create user' }).click();
    await page.getByRole('cell', { name: 'new-operator@console.test', exact: true }).waitFor();

    await page.goto(`${s.url}/admin/branding`);
    await page.getByLabel('Company name').fill('Acme Gateways');
    // the preview follows the form before anything is saved
    await page.getByRole('region', { name: 'Preview' }).getByText('Acme Gateways').waitFor();
    expect(await page.locator('header.top').textContent()).not.toContain('Acme Gateways');
    await page.getByRole('button', { name: 'Save branding' }).click();
    await page.locator('header.top').getByText('Acme Gateways console').waitFor();
    await screenshot(page, 'admin-branding-saved');
    await context.close();

    const op = await session('new-operator@console.test', 'first-password-1', '/profile');
    await op.page.getByLabel('Display name').fill('Night shift');
    await op.page.getByRole('button', { name: 'Save name' }).click();
    await op.page.getByText('Saved.').waitFor();
    expect(await op.page.getByLabel('Display name').inputValue()).toBe('Night shift');
    await op.page.getByLabel('Current password').fill('wrong-password');
    await op.page.getByLabel('New password').fill('second-password-2');
    await op.page.getByRole('button', { name: 'Change password' }).click();
    expect(await op.page.getByRole('alert').textContent()).toMatch(/current_password/);
    await op.page.getByLabel('Current password').fill('first-password-1');
    await op.page.getByLabel('New password').fill('second-password-2');
    await op.page.getByRole('button', { name: 'Change password' }).click();
    await op.page.getByText('Saved.').waitFor();
    await op.context.close();
    const relogin = await fetch(`${s.url}/api/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'new-operator@console.test', password: 'second-password-2' }),
    });
    expect(relogin.status).toBe(204);
  });
});
