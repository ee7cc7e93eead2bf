import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKeyPair, signRelease, type ReleasePayload } from '@svc/release-core';
import { readTar, releasePayload, type ArtifactRecord, type GroupRecord } from '@svc/e2e';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { writeTar } from '@svc/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clickForAnswer, hasChromium, launch, logIn, screenshot, seriousViolations } from './helpers/browser';
import { ADMIN, startConsoleServer, type ConsoleServer } from './helpers/server';

const VULN = 'PYSEC-2026-4242';

/**
 * The compliance pages in Chromium against a real server: a feed imported through the page
 * makes a finding, which leads to its exposure and the artifact's VEX; an Article 14 case is
 * opened in the browser, its clocks shown, assessed, its early warning produced, downloaded
 * (JSON digest and PDF), filed (the clock is met), a file attached and redacted, the evidence
 * archive downloaded; an overdue case is flagged; a viewer sees every write control disabled.
 */
describe.skipIf(!hasChromium())('compliance pages in Chromium against a real server', () => {
  let s: ConsoleServer;
  let browser: Browser;
  let dir: string;
  let artifactId: string;
  let caseId: string;
  beforeAll(async () => {
    [s, browser] = await Promise.all([startConsoleServer(), launch()]);
    dir = await mkdtemp(join(tmpdir(), 'svc-console-compliance-'));
    const form = new FormData();
    for (const [k, v] of Object.entries({ name: 'anomaly-model', version: '2.1.0', kind: 'model' })) form.set(k, v);
    form.set('file', new Blob(['onnx-weights']), 'anomaly.onnx');
    const up = await fetch(`${s.url}/api/v1/artifacts`, { method: 'POST', headers: s.admin, body: form });
    expect(up.status).toBe(201);
    artifactId = ((await up.json()) as { id: string }).id;
    const sbom = {
      bomFormat: 'CycloneDX',
      specVersion: '1.5',
      version: 1,
      components: [{ type: 'library', name: 'onnx', version: '1.15.0', purl: 'pkg:pypi/onnx@1.15.0' }],
    };
    const put = await fetch(`${s.url}/api/v1/artifacts/${artifactId}/sbom`, {
      method: 'PUT',
      headers: { ...s.admin, 'content-type': 'application/vnd.cyclonedx+json' },
      body: JSON.stringify(sbom),
    });
    expect(put.status).toBe(200);
    // a release of a product naming the artifact, so that its VEX page offers the product's VEX exports
    const key = generateKeyPair('ed25519');
    await s.api('POST', '/authorizer-keys', { name: 'compliance', public_key_pem: key.publicKey.pem }, 201);
    const group = await s.api<GroupRecord>('POST', '/groups', { name: 'compliance', members: [] }, 201);
    const me = await s.api<{ tenant_id: string }>('GET', '/auth/me');
    const artifact = await s.api<ArtifactRecord>('GET', `/artifacts/${artifactId}`);
    const payload = releasePayload({
      tenant: me.tenant_id,
      product: 'anomaly-detector',
      version: '2.1.0',
      components: [{ name: 'anomaly-model', artifact, placement: { path: '/var/lib/svc/anomaly.onnx' } }],
      orderedGroups: [['anomaly-model']],
      group,
      probes: [{ name: 'up', type: 'command', command: ['/bin/true'], timeout_s: 5 }],
    });
    await s.api('POST', '/releases', { envelope: signRelease(payload as unknown as ReleasePayload, key), expected_product: 'anomaly-detector' }, 201);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await s?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function session(email: string, password: string, path: string): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
    const page = await context.newPage();
    await logIn(page, s.url, email, password, path);
    return { context, page };
  }
  async function check(page: Page, name: string): Promise<void> {
    await page.waitForLoadState('networkidle');
    expect(await page.getByRole('alert').allTextContents(), name).toEqual([]);
    expect(await seriousViolations(page), name).toEqual([]);
    await screenshot(page, name);
  }

  it('a feed imported on the feeds page makes a finding; its exposure and the VEX page follow', async () => {
    const { context, page } = await session(ADMIN.email, ADMIN.password, '/vuln-feeds');
    await page.getByRole('heading', { level: 1, name: 'Vulnerability feeds' }).waitFor();
    const record = {
      schema_version: '1.6.0',
      id: VULN,
      modified: '2026-01-15T00:00:00Z',
      published: '2026-01-15T00:00:00Z',
      summary: 'Out-of-bounds read in the ONNX model loader',
      affected: [{ package: { ecosystem: 'PyPI', name: 'onnx' }, ranges: [{ type: 'ECOSYSTEM', events: [{ introduced: '0' }, { fixed: '1.16.0' }] }] }],
      database_specific: { severity: 'HIGH' },
    };
    await page.getByLabel('Source (optional)').fill('osv:console-test');
    await page.getByLabel('Feed file').setInputFiles({
      name: 'feed.tar',
      mimeType: 'application/x-tar',
      buffer: writeTar([{ name: `PyPI/${VULN}.json`, data: JSON.stringify(record) }]),
    });
    await clickForAnswer(page, page.getByRole('button', { name: 'Import' }), /\/api\/v1\/vuln-feeds\/osv$/);
    await page.getByText('Imported: 1 added').waitFor();
    await page.getByRole('cell', { name: 'osv:console-test' }).first().waitFor();
    await check(page, 'admin-vuln-feeds-imported');

    await page.getByRole('link', { name: 'Findings' }).click();
    await page.getByRole('heading', { level: 1, name: 'Findings' }).waitFor();
    // the import queues a re-analysis of every artifact with an SBOM (its run is on the feeds page)
    await expect
      .poll(
        async () => {
          await page.reload();
          await page.getByRole('heading', { level: 1, name: 'Findings' }).waitFor();
          await page.waitForLoadState('networkidle');
          return page.getByText('1–1 of 1 findings').count();
        },
        { timeout: 60_000, interval: 500 },
      )
      .toBe(1);
    await page.getByText(/By severity: 0 critical · 1 high/).waitFor();
    // the severity filter is the server's: at or above critical, nothing
    await page.getByLabel('Severity at or above').selectOption('critical');
    await page.getByText('No findings').waitFor();
    expect(new URL(page.url()).searchParams.get('severity')).toBe('critical');
    await page.getByLabel('Severity at or above').selectOption('');
    await page.getByRole('link', { name: VULN }).click();
    await page.getByRole('heading', { level: 1, name: `Vulnerability ${VULN}` }).waitFor();
    await page
      .getByRole('cell', { name: 'pkg:pypi/onnx' })
      .or(page.getByRole('cell', { name: 'onnx' }))
      .first()
      .waitFor();
    await page.getByText(/1 artifacts \(1 with open findings\)/).waitFor();
    await check(page, 'admin-vulnerability');
    await page.getByRole('link', { name: 'anomaly-model 2.1.0' }).click();
    await page.getByRole('heading', { level: 1, name: 'VEX statements' }).waitFor();
    const vex = {
      '@context': 'https://openvex.dev/ns/v0.2.0',
      '@id': 'https://example.test/vex/1',
      author: 'security@example.test',
      timestamp: '2026-02-01T00:00:00Z',
      version: 1,
      statements: [
        {
          vulnerability: { name: VULN },
          products: [{ '@id': 'pkg:pypi/onnx@1.15.0' }],
          status: 'not_affected',
          justification: 'vulnerable_code_not_in_execute_path',
        },
      ],
    };
    await page.getByLabel('VEX document (OpenVEX or CycloneDX JSON)').setInputFiles({
      name: 'vex.json',
      mimeType: 'application/json',
      buffer: Buffer.from(JSON.stringify(vex)),
    });
    await page.getByText(/^Recorded 1 statements/).waitFor();
    // a fresh visit reads the statements again: right after the write, GET /artifacts/{id}/vex has answered total 1 with no rows on the embedded database
    await page.reload();
    await page.getByRole('cell', { name: 'not affected' }).waitFor();
    // the product's VEX in the three formats, downloaded with the session
    const exports = page.getByRole('region', { name: 'VEX exports' });
    for (const [label, type, filename] of [
      ['CSAF 2.0 VEX', 'application/json', 'svc-vex-anomaly-detector.json'],
      ['OpenVEX', 'application/openvex+json', 'anomaly-detector.openvex.json'],
      ['CycloneDX VEX', 'application/vnd.cyclonedx+json', 'anomaly-detector.cdx.json'],
    ] as const) {
      const download = page.waitForEvent('download');
      await exports.getByRole('link', { name: label }).click();
      const file = await download;
      expect(file.suggestedFilename()).toBe(filename);
      const text = await readFile(await file.path(), 'utf8');
      expect(text, label).toContain(VULN);
      const res = await page.request.get(`${s.url}${(await exports.getByRole('link', { name: label }).getAttribute('href'))!}`);
      expect(res.headers()['content-type'], label).toContain(type);
    }
    await check(page, 'admin-vex');
    await context.close();
  });

  it('a case opened in the browser shows its clocks; assessed, its early warning produced, downloaded and filed; a file attached and redacted; the archive exported', async () => {
    const { context, page } = await session(ADMIN.email, ADMIN.password, '/cases');
    await page.getByRole('heading', { level: 1, name: 'Article 14 cases' }).waitFor();
    await page.getByLabel('Title').fill('ONNX loader exploited');
    await page.getByLabel('Products').fill('edge-gw');
    await page.getByLabel('Vulnerability ids').fill(VULN);
    await page.getByLabel('Awareness evidence').fill('CSIRT advisory mail of this morning');
    await clickForAnswer(page, page.getByRole('button', { name: 'Open case' }), /\/api\/v1\/cases$/);
    await page.waitForURL(/\/cases\/[0-9a-f-]{36}$/);
    caseId = new URL(page.url()).pathname.split('/').pop()!;
    await page.getByRole('heading', { level: 1, name: 'Case: ONNX loader exploited' }).waitFor();
    // the clocks: the early warning within 24 h, the notification within 72 h, counted from awareness
    const early = page.getByRole('row').filter({ hasText: 'early warning' });
    await early.getByText(/^(23 h \d+ min|24 h 0 min) left$/).waitFor();
    await page
      .getByRole('row')
      .filter({ hasText: /^notification/ })
      .getByText(/^(2 d 23 h|3 d 0 h) left$/)
      .waitFor();
    await check(page, 'admin-case-opened');

    await page.getByLabel('Rationale').fill('Exploited in the wild; our gateways run the affected loader.');
    await clickForAnswer(page, page.getByRole('button', { name: 'Record assessment' }), /\/assessments$/);
    await page.getByText(/reportable by /).waitFor();

    await page.getByLabel('Member States where the product is made available').selectOption(['DE', 'FR']);
    await page.getByLabel('Sensitivity of the information (TLP)').selectOption('TLP:AMBER');
    await clickForAnswer(page, page.getByRole('button', { name: 'Produce submission' }), /\/submissions$/);
    await page.getByText(/^Produced the early warning submission/).waitFor();
    const listed = await s.api<{ submissions: { id: string; digest: string; stage: string }[] }>('GET', `/cases/${caseId}/submissions`);
    expect(listed.submissions.map((x) => x.stage)).toEqual(['early_warning']);
    const [json] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'JSON of the early warning submission' }).click()]);
    const jsonFile = join(dir, 'early-warning.json');
    await json.saveAs(jsonFile);
    const bytes = await readFile(jsonFile);
    expect(`sha256:${createHash('sha256').update(bytes).digest('hex')}`).toBe(listed.submissions[0]!.digest);
    expect(JSON.parse(bytes.toString('utf8'))).toMatchObject({ stage: 'early_warning', content: { member_states: ['DE', 'FR'], sensitivity: 'TLP:AMBER' } });
    const [pdf] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'PDF of the early warning submission' }).click()]);
    const pdfFile = join(dir, 'early-warning.pdf');
    await pdf.saveAs(pdfFile);
    expect((await readFile(pdfFile)).subarray(0, 5).toString('latin1')).toBe('%PDF-');

    await page.getByLabel('Coordinator CSIRT Member State for the early warning submission').selectOption('DE');
    await page.getByLabel('External reference for the early warning submission').fill('CSIRT-DE-42');
    await clickForAnswer(page, page.getByRole('button', { name: 'Record filing of the early warning submission' }), /\/filings$/);
    await page.getByText('Filed to CSIRT (recorded as filed by you), reference CSIRT-DE-42.').waitFor();
    // the early warning deadline is met by the filing to the CSIRT
    await early.getByText('met', { exact: true }).waitFor();
    const filed = await s.api<{ deadlines: { obligation: string; status: string; met_at: string | null }[] }>('GET', `/cases/${caseId}`);
    expect(filed.deadlines.find((d) => d.obligation === 'early_warning')!.met_at).not.toBeNull();

    // a corrective measure starts the final report's clock: due 14 days after it
    await page.getByLabel('Measure description').fill('onnx 1.16.0 in release edge-gw 2026.2.0');
    await clickForAnswer(page, page.getByRole('button', { name: 'Record measure' }), /\/corrective-measure$/);
    await page
      .getByRole('row')
      .filter({ hasText: /^final report/ })
      .getByText(/^(13 d 23 h|14 d 0 h) left$/)
      .waitFor();
    await page.getByRole('cell', { name: 'onnx 1.16.0 in release edge-gw 2026.2.0' }).waitFor();
    await page.getByRole('cell', { name: 'case.open', exact: true }).waitFor();

    await page
      .getByLabel('Attachment file')
      .setInputFiles({ name: 'mail.txt', mimeType: 'text/plain', buffer: Buffer.from('From: csirt@example.test\nexploited\n') });
    await page.getByLabel('Attachment description').fill('the CSIRT mail');
    await clickForAnswer(page, page.getByRole('button', { name: 'Attach', exact: true }), /\/attachments$/);
    await page.getByRole('link', { name: 'mail.txt' }).waitFor();
    await page.getByLabel('Redaction reason for mail.txt').fill('contains a personal address');
    await clickForAnswer(page, page.getByRole('button', { name: 'Redact mail.txt' }), /\/redaction$/);
    await page.getByText('contains a personal address').waitFor();
    expect(await page.getByRole('link', { name: 'mail.txt' }).count()).toBe(0);
    await check(page, 'admin-case-filed');

    const [archive] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Evidence archive (tar, signed manifest)' }).click()]);
    const tarFile = join(dir, 'case.tar');
    await archive.saveAs(tarFile);
    const names = readTar(await readFile(tarFile)).map((e) => e.name);
    expect(names).toContain('case.json');
    expect(names).toContain('submissions/index.json');
    await context.close();
  });

  it('an overdue case is flagged and filtered by the server; the dashboard shows open findings by severity and the nearest deadlines', async () => {
    const aware = new Date(Date.now() - 3 * 86_400_000).toISOString();
    await s.api(
      'POST',
      '/cases',
      {
        kind: 'severe_incident',
        title: 'Gateway fleet outage',
        owner: 'secops',
        awareness: { aware_at: aware, aware_by: 'secops', evidence: 'pager' },
      },
      201,
    );
    const { context, page } = await session(ADMIN.email, ADMIN.password, '/cases');
    const late = page.getByRole('row').filter({ hasText: 'Gateway fleet outage' });
    await late.getByText(/^overdue by /).waitFor();
    await late.getByText('overdue', { exact: true }).waitFor();
    await page.getByLabel('Overdue').selectOption('true');
    await page.getByText('1–1 of 1 cases').waitFor();
    expect(new URL(page.url()).searchParams.get('overdue')).toBe('true');
    expect(await page.getByRole('link', { name: 'ONNX loader exploited' }).count()).toBe(0);
    await check(page, 'admin-cases-overdue');

    await page.goto(`${s.url}/`);
    await page.getByRole('heading', { name: 'Open findings by severity' }).waitFor();
    // the finding is closed by the VEX statement (not affected): no open high finding remains
    const high = page.getByRole('link', { name: /high$/ });
    await expect.poll(() => high.textContent()).toMatch(/^0\s*high$/);
    const deadlines = page.getByRole('table', { name: /nearest deadline first/ });
    await deadlines.getByRole('link', { name: 'Gateway fleet outage' }).waitFor();
    await deadlines.getByRole('link', { name: 'ONNX loader exploited' }).waitFor();
    await deadlines
      .getByText(/^overdue by/)
      .first()
      .waitFor();
    await check(page, 'admin-dashboard-compliance');
    await context.close();
  });

  it('a viewer reads every compliance page with the write controls disabled and the reason shown', async () => {
    const viewer = await s.user('viewer');
    const { context, page } = await session(viewer.email, viewer.password, '/cases');
    const reason = 'Your role (viewer) lacks the permission evidence.write.';
    await page.getByText(reason).first().waitFor();
    expect(await page.getByRole('group', { name: 'Open a case' }).evaluate((f) => (f as HTMLFieldSetElement).disabled)).toBe(true);
    expect(await page.getByRole('button', { name: 'Open case' }).isDisabled()).toBe(true);
    await check(page, 'viewer-cases');

    await page.goto(`${s.url}/cases/${caseId}`);
    await page.getByRole('heading', { level: 1, name: 'Case: ONNX loader exploited' }).waitFor();
    await page.getByText(reason).first().waitFor();
    for (const name of ['Save changes', 'Record correction', 'Record measure', 'Record request', 'Produce submission', 'Prepare packet', 'Attach'])
      expect(await page.getByRole('button', { name, exact: true }).isDisabled(), name).toBe(true);
    expect(await page.getByRole('button', { name: 'Record filing of the early warning submission' }).isDisabled()).toBe(true);
    expect(await page.getByLabel('Transport for the early warning submission').isDisabled()).toBe(true);
    expect(await page.getByLabel('Case title').isDisabled()).toBe(true);
    // reading stays open: the downloads are links
    await page.getByRole('link', { name: 'PDF of the early warning submission' }).waitFor();
    await page.getByRole('link', { name: 'Evidence archive (tar, signed manifest)' }).waitFor();
    await check(page, 'viewer-case');

    await page.goto(`${s.url}/artifacts/${artifactId}/vex`);
    await page.getByText(reason).first().waitFor();
    expect(await page.getByLabel('VEX document (OpenVEX or CycloneDX JSON)').isDisabled()).toBe(true);
    await check(page, 'viewer-vex');

    await page.goto(`${s.url}/vuln-feeds`);
    await page.getByText('Your role (viewer) lacks the permission admin.manage.').waitFor();
    expect(await page.getByRole('button', { name: 'Import' }).isDisabled()).toBe(true);
    await check(page, 'viewer-vuln-feeds');

    await page.goto(`${s.url}/reports`);
    await page.getByRole('link', { name: 'Vulnerability report (PDF)' }).waitFor();
    await check(page, 'viewer-reports');
    await context.close();
  });

  it('reports download as PDF and JSON from the reports page', async () => {
    const { context, page } = await session(ADMIN.email, ADMIN.password, '/reports');
    for (const [link, kind] of [
      ['Vulnerability report (PDF)', 'pdf'],
      ['Vulnerability report (JSON)', 'json'],
      ['Readiness report (PDF)', 'pdf'],
      ['Readiness report (JSON)', 'json'],
    ] as const) {
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: link }).click()]);
      const file = join(dir, `${link.replace(/\W+/g, '-')}`);
      await download.saveAs(file);
      const bytes = await readFile(file);
      if (kind === 'pdf') expect(bytes.subarray(0, 5).toString('latin1'), link).toBe('%PDF-');
      else expect(JSON.parse(bytes.toString('utf8')), link).toBeTypeOf('object');
    }
    await check(page, 'admin-reports');
    await context.close();
  });
  it('a case is edited on its page, a refused link shown at its field; a submission delivered by the file transport; the unconfigured webhook refused in words', async () => {
    const { context, page } = await session(ADMIN.email, ADMIN.password, `/cases/${caseId}`);
    await page.getByRole('heading', { level: 1, name: 'Case: ONNX loader exploited' }).waitFor();
    const edit = page.getByRole('group', { name: 'Title, owner, products and links' });
    // a link the server refuses: its words are shown under the field that names it
    const missing = '00000000-0000-4000-8000-000000000000';
    await edit.getByLabel('Linked artifact ids').fill(missing);
    await edit.getByRole('button', { name: 'Save changes' }).click();
    const refused = edit.getByRole('alert');
    await refused.getByText(`artifact_ids[0]: no artifact ${missing}`).waitFor();
    expect(await edit.getByLabel('Linked artifact ids').getAttribute('aria-describedby')).toBe(await refused.getAttribute('id'));
    expect(await edit.getByLabel('Linked artifact ids').getAttribute('aria-invalid')).toBe('true');
    await edit.getByLabel('Linked artifact ids').fill('not-a-uuid');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await edit
      .getByRole('alert')
      .getByText(/^body\.artifact_ids\.0: /)
      .waitFor();

    await edit.getByLabel('Case title').fill('ONNX loader exploited in the wild');
    await edit.getByLabel('Case owner').fill('psirt');
    await edit.getByLabel('Case products').fill('edge-gw, edge-cam');
    await edit.getByLabel('Linked artifact ids').fill(artifactId);
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('heading', { level: 1, name: 'Case: ONNX loader exploited in the wild' }).waitFor();
    await page.getByText('Saved.').waitFor();
    await page
      .getByRole('definition')
      .filter({ hasText: /^psirt$/ })
      .waitFor();
    await page
      .getByRole('definition')
      .filter({ hasText: /^edge-gw, edge-cam$/ })
      .waitFor();
    await page.getByRole('cell', { name: 'case.update', exact: true }).waitFor();
    const edited = await s.api<{ title: string; owner: string; products: string[]; artifact_ids: string[] }>('GET', `/cases/${caseId}`);
    expect(edited).toMatchObject({ title: 'ONNX loader exploited in the wild', owner: 'psirt', products: ['edge-gw', 'edge-cam'], artifact_ids: [artifactId] });
    expect(await page.getByRole('alert').count()).toBe(0);

    // the server has no webhook URL: the filing is refused, in words, and nothing is recorded
    const label = 'the early warning submission';
    const { submissions } = await s.api<{ submissions: { id: string; digest: string }[] }>('GET', `/cases/${caseId}/submissions`);
    const sid = submissions[0]!.id;
    const filingsBefore = (await s.api<{ filings: unknown[] }>('GET', `/cases/${caseId}/submissions/${sid}`)).filings.length;
    await page.getByLabel(`Coordinator CSIRT Member State for ${label}`).selectOption('DE');
    await page.getByLabel(`Transport for ${label}`).selectOption('webhook');
    expect(await page.getByLabel(`External reference for ${label}`).count()).toBe(0);
    await clickForAnswer(page, page.getByRole('button', { name: `Deliver and record filing of ${label}` }), /\/filings$/);
    await page.getByRole('alert').getByText('Error: transport: the webhook transport is not configured on this server (SVC_EVIDENCE_WEBHOOK_URL)').waitFor();
    expect((await s.api<{ filings: unknown[] }>('GET', `/cases/${caseId}/submissions/${sid}`)).filings.length).toBe(filingsBefore);

    await page.getByLabel(`Transport for ${label}`).selectOption('file');
    await clickForAnswer(page, page.getByRole('button', { name: `Deliver and record filing of ${label}` }), /\/filings$/);
    await page.getByText('Filed to CSIRT by the file transport.').waitFor();
    const written = await page.getByRole('status').filter({ hasText: 'by the file transport' }).locator('code').allTextContents();
    const json = written.find((t) => t.endsWith(`${sid}.json`));
    expect(json, written.join(' | ')).toBeDefined();
    expect(
      `sha256:${createHash('sha256')
        .update(await readFile(json!))
        .digest('hex')}`,
    ).toBe(submissions[0]!.digest);
    expect((await stat(json!.replace(/\.json$/, '.pdf'))).size).toBeGreaterThan(0);
    const { filings } = await s.api<{ filings: { transport: string; delivery: { files?: string[] } }[] }>('GET', `/cases/${caseId}/submissions/${sid}`);
    expect(filings.length).toBe(filingsBefore + 1);
    expect(filings.find((f) => f.transport === 'file')?.delivery.files).toContain(json);
    await check(page, 'admin-case-edited-filed-by-file');
    await context.close();
  });

  it('the reporting-platform packet: prepared on the case page, its fields in the form order, the missing required values named, copied per field and whole', async () => {
    const { context, page } = await session(ADMIN.email, ADMIN.password, `/cases/${caseId}`);
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: s.url });
    await page.getByRole('heading', { level: 1, name: /^Case: / }).waitFor();
    const section = page.getByRole('region', { name: 'Reporting-platform packet (ENISA)' });
    await section.getByText('No packet prepared yet.').waitFor();
    type Packet = {
      id: string;
      stage: string;
      text: string;
      fields: { id: string; label: string; value: string | null }[];
      missing: { id: string; label: string }[];
    };
    // bound by the server's answer, however long the packet takes on a busy machine
    const prepare = async (stage: string): Promise<Packet> => {
      await section.getByLabel('Packet stage').selectOption(stage);
      const [res] = await Promise.all([
        page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === `/api/v1/cases/${caseId}/srp-packets`, { timeout: 0 }),
        section.getByRole('button', { name: 'Prepare packet' }).click(),
      ]);
      expect(res.status()).toBe(201);
      return (await res.json()) as Packet;
    };
    const shownFields = () => section.locator('ol.packet-fields > li').evaluateAll((els) => els.map((e) => e.getAttribute('data-field')));
    const clipboard = () => page.evaluate(() => navigator.clipboard.readText());

    // the early warning produced in the browser before fills every required field
    const early = await prepare('early_warning');
    await section.getByRole('heading', { name: /^Early warning packet, prepared by / }).waitFor();
    expect(early.missing).toEqual([]);
    expect(await shownFields()).toEqual(early.fields.map((f) => f.id));
    await section.getByText('Every required field has a value.').waitFor();
    const states = 'Member States where the product is made available';
    expect(early.fields.find((f) => f.id === 'member_states')?.value).toBe('DE, FR');
    await section.getByRole('button', { name: `Copy ${states}` }).click();
    await section.getByRole('status').getByText(`Copied ${states}.`).waitFor();
    expect(await clipboard()).toBe('DE, FR');

    // the notification is not produced yet: what it still has to give is named above the fields
    const notification = await prepare('notification');
    await section.getByRole('heading', { name: /^Notification packet, prepared by / }).waitFor();
    expect(notification.missing.map((m) => m.id)).toEqual(['product_information', 'vulnerability_nature', 'exploit_nature', 'user_measures']);
    const missing = section.getByRole('region', { name: `Missing required values (${notification.missing.length})` });
    expect(await missing.getByRole('listitem').allTextContents()).toEqual(notification.missing.map((m) => m.label));
    expect(await shownFields()).toEqual(notification.fields.map((f) => f.id));
    expect(await section.locator('li[data-field="user_measures"]').getByText('(no value)').count()).toBe(1);
    await section.getByRole('button', { name: 'Copy the whole packet' }).click();
    await section.getByRole('status').getByText('Copied the whole packet.').waitFor();
    expect(await clipboard()).toBe(notification.text);
    expect(notification.text).toContain(`Missing required values (4): ${notification.missing.map((m) => m.label).join('; ')}`);
    // both recorded with the case
    const listed = await s.api<{ packets: { id: string }[] }>('GET', `/cases/${caseId}/srp-packets`);
    expect(listed.packets.map((p) => p.id)).toEqual([early.id, notification.id]);
    await page.getByRole('cell', { name: 'case.packet-create', exact: true }).first().waitFor();
    await check(page, 'admin-case-srp-packet');
    await context.close();
  });
});
