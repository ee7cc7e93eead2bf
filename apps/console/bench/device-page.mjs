#!/usr/bin/env node
/**
 * The console's device page on a 100k-device fleet, in Chromium (/usr/bin/chromium), beside a
 * static page of the same size served by the same server process:
 *
 *   - first contentful paint of /devices (logged in, cold page load), and the moment its first
 *     50 devices are on screen, against the FCP of a static HTML page holding the same
 *     rendered markup (no script);
 *   - the next-page interaction: from the click on "Next page" until the next 50 rows are on
 *     screen, against a click on a link to a second static page until it has painted.
 *
 * Embedded database, the server process of the e2e harness (apps/server/dist/main.js). Medians
 * of RUNS runs, printed with their ratio to the static page.
 * The static pages are written into the console build for the run (the server serves the
 * build from memory, loaded at start) and removed afterwards.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startServer } from '@svc/e2e';
import { chromium } from 'playwright-core';

const here = import.meta.dirname;
const serverDir = resolve(here, '../../server');
const consoleDist = resolve(here, '../dist');
const CHROMIUM = '/usr/bin/chromium';
const DEVICES = Number(process.env.SVC_BENCH_DEVICES ?? 100_000);
const RUNS = Number(process.env.SVC_BENCH_RUNS ?? 7);
const ADMIN = { email: 'bench@console.test', password: 'console-bench-password' };
const STATIC = ['bench-static-1.html', 'bench-static-2.html'];

if (!existsSync(CHROMIUM)) {
  console.log(`console bench: SKIPPED (${CHROMIUM} not found; apt-get install chromium)`);
  process.exit(process.env.CI === 'true' ? 1 : 0);
}
if (!existsSync(join(consoleDist, 'index.html'))) throw new Error('console bench: build the console first (pnpm build)');

const { openStore, migrateToLatest, ensureDefaultTenant } = await import(pathToFileURL(join(serverDir, 'dist/index.js')).href);
const { seedDevices } = await import(pathToFileURL(join(serverDir, 'bench/seed-devices.mjs')).href);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fcpOf = (page) =>
  page.evaluate(
    () =>
      new Promise((res) => {
        const found = () => performance.getEntriesByName('first-contentful-paint')[0]?.startTime;
        if (found() !== undefined) return res(found());
        new PerformanceObserver((l) => res(l.getEntries()[0].startTime)).observe({ type: 'paint', buffered: true });
      }),
  );

async function logIn(browser, url) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  await page.goto(`${url}/login`);
  await page.getByLabel('Email').fill(ADMIN.email);
  await page.getByLabel('Password').fill(ADMIN.password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL((u) => u.pathname === '/');
  return { context, page };
}

/** The device page as rendered, without scripts, as two linked static pages. */
async function writeStaticPages(browser, url) {
  const { context, page } = await logIn(browser, url);
  await page.goto(`${url}/devices`);
  await page.getByRole('link', { name: 'dev-0000001' }).waitFor();
  const html = await page.evaluate(() => {
    for (const s of document.querySelectorAll('script')) s.remove();
    return `<!doctype html>\n${document.documentElement.outerHTML}`;
  });
  await context.close();
  // "Next page" becomes a link to the other static page (same markup, same size)
  const linked = (to) => html.replace(/<button type="button">Next page<\/button>/, `<a class="button" href="/${to}">Next page</a>`);
  await writeFile(join(consoleDist, STATIC[0]), linked(STATIC[1]));
  await writeFile(join(consoleDist, STATIC[1]), linked(STATIC[0]));
  return Buffer.byteLength(html);
}

async function measure(browser, url) {
  const console_ = { fcp: [], rows: [], next: [] };
  const statics = { fcp: [], next: [] };
  for (let i = 0; i < RUNS; i++) {
    const { context, page } = await logIn(browser, url);
    // the console: a cold load of /devices (a fresh context: nothing cached but the session)
    const fresh = await context.newPage();
    await fresh.goto(`${url}/devices`);
    console_.fcp.push(await fcpOf(fresh));
    // the first page of devices on screen, since navigation start
    const rowsAt = await fresh.waitForFunction(() => document.querySelector('a[href="/devices/dev-0000001"]') && performance.now(), undefined, {
      polling: 'raf',
    });
    console_.rows.push(await rowsAt.jsonValue());
    const t0 = await fresh.evaluate(() => performance.now());
    await fresh.getByRole('button', { name: 'Next page' }).click();
    await fresh.getByRole('link', { name: 'dev-0000052' }).waitFor();
    console_.next.push((await fresh.evaluate(() => performance.now())) - t0);
    await fresh.close();
    await page.close();
    // the static pages, in another fresh context
    await context.close();
    const sctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const sp = await sctx.newPage();
    await sp.goto(`${url}/${STATIC[0]}`);
    statics.fcp.push(await fcpOf(sp));
    const clickAt = await sp.evaluate(() => performance.timeOrigin + performance.now());
    await Promise.all([sp.waitForURL((u) => u.pathname === `/${STATIC[1]}`), sp.getByRole('link', { name: 'Next page' }).click()]);
    const paintedAt = await sp.evaluate(async () => {
      const fcp = await new Promise((res) => {
        const e = performance.getEntriesByName('first-contentful-paint')[0];
        if (e) return res(e.startTime);
        new PerformanceObserver((l) => res(l.getEntries()[0].startTime)).observe({ type: 'paint', buffered: true });
      });
      return performance.timeOrigin + fcp;
    });
    statics.next.push(paintedAt - clickAt);
    await sctx.close();
  }
  return { console: console_, statics };
}

const started = performance.now();
const dataDir = await mkdtemp(join(tmpdir(), 'svc-console-bench-'));
let server;
let browser;
try {
  console.log(`console bench: seeding ${DEVICES.toLocaleString()} devices (embedded database)`);
  const store = await openStore({ pgliteDir: join(dataDir, 'db'), schema: 'public' });
  await migrateToLatest(store);
  const seedMs = await seedDevices(store.db, await ensureDefaultTenant(store.db), DEVICES);
  await store.close();
  console.log(`seeded in ${(seedMs / 1000).toFixed(1)} s`);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  // the seeded devices send no heartbeats: a long check-in interval keeps the offline detector from flipping them mid-run
  const start = () => startServer({ dataDir, admin: ADMIN, checkInIntervalS: 3600 });
  server = await start();
  const bytes = await writeStaticPages(browser, server.url);
  // restart: the server reads the console build (now with the static pages) once, at start
  await server.stop();
  server = await start();
  const r = await measure(browser, server.url);
  const row = (name, c, s) =>
    console.log(
      `${name.padEnd(44)} ${median(c).toFixed(0).padStart(8)} ${median(s).toFixed(0).padStart(10)} ${(median(c) / median(s)).toFixed(2).padStart(8)}`,
    );
  console.log(`\nconsole device page, ${DEVICES.toLocaleString()} devices, embedded database, Chromium, median of ${RUNS} runs`);
  console.log(`static page: the rendered device page without scripts, ${bytes.toLocaleString()} bytes, served by the same server`);
  console.log(`${'measure'.padEnd(44)} ${'console'.padStart(8)} ${'static'.padStart(10)} ${'ratio'.padStart(8)}`);
  row('first contentful paint (ms)', r.console.fcp, r.statics.fcp);
  row('first 50 devices on screen (ms; static: its FCP)', r.console.rows, r.statics.fcp);
  row('next page: click to the next rows painted (ms)', r.console.next, r.statics.next);
} finally {
  for (const f of STATIC) rmSync(join(consoleDist, f), { force: true });
  await browser?.close();
  if (server) await server.stop();
  await rm(dataDir, { recursive: true, force: true });
}
console.log(`\nbench done in ${((performance.now() - started) / 1000).toFixed(0)} s`);
