/**
 * Real Chromium (Debian's /usr/bin/chromium) driven by playwright-core; nothing downloads a
 * browser. Tests skip loudly when it is missing, and fail under CI=true (requireTool).
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import { chromium, type Browser, type Locator, type Page, type Response } from 'playwright-core';
import { requireTool } from '../../../../vitest.shared.js';

export const CHROMIUM = '/usr/bin/chromium';
export const hasChromium = (): boolean => requireTool(CHROMIUM, 'chromium');
export const SCREENSHOTS = resolve(import.meta.dirname, '../../test-results/screenshots');

export function launch(): Promise<Browser> {
  // --no-sandbox: test machines and CI run as root, where Chromium's sandbox refuses to start
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const file = join(SCREENSHOTS, `${name.replace(/[^a-z0-9-]+/gi, '-').replace(/^-|-$/g, '') || 'root'}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/** axe-core's serious and critical violations on the page, one line each (empty = none). */
export async function seriousViolations(page: Page): Promise<string[]> {
  const result = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze();
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map(
      (v) =>
        `${v.impact} ${v.id}: ${v.help} (${v.nodes
          .map((n) => n.target.join(' '))
          .slice(0, 3)
          .join(', ')})`,
    );
}

/** Logs in through the login form and waits for the page it returns to. */
export async function logIn(page: Page, base: string, email: string, password: string, path = '/'): Promise<void> {
  await page.goto(`${base}${path}`);
  await page.waitForURL(/\/login\?next=/);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL((u) => u.pathname === path.split('?')[0]);
}

/**
 * Clicks `target` and waits, with no time limit, for the server's answer to the write the click
 * sends (`method` on a path matching `path`). On a busy machine a heavy request (a feed import,
 * a submission with its PDF, an upload) is slow, not lost: the request in flight is the progress,
 * and the test's own timeout is the backstop. What the page shows after the answer is then a
 * short wait of the usual kind.
 */
export async function clickForAnswer(page: Page, target: Locator, path: RegExp, method = 'POST'): Promise<Response> {
  const [response] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === method && path.test(new URL(r.url()).pathname), { timeout: 0 }),
    target.click(),
  ]);
  return response;
}
