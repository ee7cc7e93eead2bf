/**
 * Feed imports over HTTP with small OSV and KEV files made here in the published formats:
 * zip, tar and tar.gz archives; incremental by `modified`; idempotent by content; resumable
 * from the cursor after a crash between batches; hostile archives refused with a 400 before
 * anything is written; bad records skipped and counted, never a 500.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runUnitOfWork, systemActor } from '../../../src/resources/unit-of-work.js';
import { importOsvBatch, startOsvImport } from '../../../src/resources/vuln-feeds/commands.js';
import { readOsvRecord } from '../../../src/resources/vuln-feeds/osv.js';
import { availableDrivers } from '../../helpers/store.js';
import { kevCatalog, makeTar, makeZip, osvRecord, osvZip } from '../../helpers/feeds.js';
import { createReleaseFixture, type ReleaseFixture } from '../../fixtures/release-flow.js';
import { createHash } from 'node:crypto';
import { SERVER_LIMITS } from '../../../src/limits.js';

const npm = (id: string, name: string, fixed: string, modified = '2024-01-01T00:00:00Z', aliases: string[] = []) =>
  osvRecord({
    id,
    modified,
    aliases,
    affected: [{ ecosystem: 'npm', name, ranges: [{ type: 'SEMVER', events: [{ introduced: '0' }, { fixed }] }] }],
    database_specific: { severity: 'HIGH' },
  });

describe.each(availableDrivers())('vulnerability feeds on %s', (driver) => {
  let f: ReleaseFixture;
  const db = () => f.t.testStore.store.db;
  const post = (body: Buffer, type = 'application/zip', source = 'osv:npm', headers = f.admin) =>
    f.t.app.inject({
      method: 'POST',
      url: `/api/v1/vuln-feeds/osv?source=${encodeURIComponent(source)}`,
      headers: { ...headers, 'content-type': type },
      payload: body,
    });
  const advisories = async () => (await sql<{ id: string; modified: Date }>`SELECT id, modified FROM vuln_advisories ORDER BY id`.execute(db())).rows;
  const audits = async (action: string) =>
    Number((await sql<{ n: string }>`SELECT count(*) AS n FROM audit_events WHERE action = ${action}`.execute(db())).rows[0]!.n);

  beforeAll(async () => {
    f = await createReleaseFixture(driver);
  });
  afterAll(async () => {
    await f?.dispose();
  });

  it('imports an OSV zip, then the same bytes again change nothing; a newer record replaces, an older one does not', async () => {
    const zip = osvZip([npm('GHSA-aaaa-bbbb-cccc', 'left-pad', '1.3.0', undefined, ['CVE-2024-1000']), npm('GHSA-dddd-eeee-ffff', 'lodash', '4.17.21')]);
    const first = await post(zip);
    expect(first.statusCode, first.body).toBe(201);
    expect(JSON.parse(first.body)).toMatchObject({
      kind: 'osv',
      source: 'osv:npm',
      state: 'completed',
      entries_total: 2,
      entries_done: 2,
      added: 2,
      updated: 0,
      unchanged: 0,
      skipped: 0,
    });
    expect(await audits('vuln-feed.import.start')).toBe(1);
    expect(await audits('vuln-feed.import.complete')).toBe(1);
    const again = await post(zip);
    expect(again.statusCode).toBe(200);
    expect(JSON.parse(again.body).id).toBe(JSON.parse(first.body).id);
    expect(await audits('vuln-feed.import.start')).toBe(1);

    // incremental: a newer modified replaces, an older or equal one is unchanged
    const next = osvZip([
      npm('GHSA-aaaa-bbbb-cccc', 'left-pad', '1.4.0', '2024-02-01T00:00:00Z', ['CVE-2024-1000']),
      npm('GHSA-dddd-eeee-ffff', 'lodash', '9.9.9', '2023-01-01T00:00:00Z'),
    ]);
    const r = JSON.parse((await post(next)).body);
    expect(r).toMatchObject({ added: 0, updated: 1, unchanged: 1 });
    const stored = await sql<{ affected: any }>`SELECT affected FROM vuln_advisories WHERE id = 'GHSA-dddd-eeee-ffff'`.execute(db());
    expect(JSON.stringify(stored.rows[0]!.affected)).toContain('4.17.21');
    const ids = await sql<{ id: string; vuln_key: string }>`SELECT id, vuln_key FROM vuln_ids WHERE advisory_id = 'GHSA-aaaa-bbbb-cccc' ORDER BY id`.execute(
      db(),
    );
    expect(ids.rows).toEqual([
      { id: 'CVE-2024-1000', vuln_key: 'CVE-2024-1000' },
      { id: 'GHSA-aaaa-bbbb-cccc', vuln_key: 'CVE-2024-1000' },
    ]);

    const list = (await f.api('GET', '/api/v1/vuln-feeds/imports')).body;
    expect(list).toMatchObject({ total: 2, counts: { running: 0, completed: 2 } });
    const fresh = (await f.api('GET', '/api/v1/vuln-feeds')).body;
    expect(fresh).toMatchObject({ advisories: 2, newest_modified: '2024-02-01T00:00:00.000Z', osv: [{ source: 'osv:npm', imports: 2 }] });
  });

  it('reads tar and tar.gz archives of the same records', async () => {
    const recs = [npm('GHSA-tttt-aaaa-rrrr', 'tar-pkg', '2.0.0')];
    const tar = await makeTar(recs.map((r) => ({ name: `npm/${String(r['id'])}.json`, data: JSON.stringify(r) })));
    expect(JSON.parse((await post(tar, 'application/x-tar')).body)).toMatchObject({ added: 1, state: 'completed' });
    const tgz = await makeTar([{ name: 'GHSA-gggg-zzzz-tttt.json', data: JSON.stringify(npm('GHSA-gggg-zzzz-tttt', 'tgz-pkg', '1.0.0')) }], true);
    expect(JSON.parse((await post(tgz, 'application/gzip')).body)).toMatchObject({ added: 1, state: 'completed' });
  });

  it('skips and counts malformed, non-OSV and oversized records; the rest import', async () => {
    const good = npm('GHSA-good-good-good', 'good-pkg', '1.0.0');
    const zip = makeZip([
      { name: 'good.json', data: JSON.stringify(good) },
      { name: 'broken.json', data: '{"id": ' },
      { name: 'not-osv.json', data: JSON.stringify({ id: 'NOPE-1', modified: '2024-01-01T00:00:00Z' }) },
      { name: 'big.json', data: 'x', declaredSize: SERVER_LIMITS.feeds.maxRecordBytes + 1 },
      // valid JSON and a valid record, but a text the database cannot store
      { name: 'nul.json', data: JSON.stringify({ ...npm('GHSA-nnnn-uuuu-llll', 'nul-pkg', '1.0.0'), summary: 'a \u0000 inside' }) },
      { name: 'README.md', data: 'not a record' },
    ]);
    const res = await post(zip);
    expect(res.statusCode, res.body).toBe(201);
    const body = JSON.parse(res.body);
    expect(body).toMatchObject({ entries_total: 5, added: 1, skipped: 4 });
    expect(body.skipped_detail.map((s: any) => s.entry).sort()).toEqual(['big.json', 'broken.json', 'not-osv.json', 'nul.json']);
    expect(body.skipped_detail.find((s: any) => s.entry === 'nul.json').reason).toBe('summary: must not contain control characters (U+0000 at index 2)');
    expect(body.skipped_detail.find((s: any) => s.entry === 'not-osv.json').reason).toMatch(/^not an OSV record: id: must match pattern/);
  });

  it('refuses hostile archives with a 400 naming the problem, writing nothing', async () => {
    const before = await advisories();
    const importsBefore = Number((await sql<{ n: string }>`SELECT count(*) AS n FROM vuln_imports`.execute(db())).rows[0]!.n);
    const rec = JSON.stringify(npm('GHSA-evil-evil-evil', 'evil', '1.0.0'));
    const cases: [string, Buffer, string, number, RegExp][] = [
      [
        'path traversal',
        makeZip([
          { name: 'ok.json', data: rec },
          { name: '../../etc/evil.json', data: rec },
        ]),
        'application/zip',
        400,
        /^entry "..\/..\/etc\/evil.json": path traversal/,
      ],
      ['absolute path', makeZip([{ name: '/etc/evil.json', data: rec }]), 'application/zip', 400, /absolute path/],
      ['tar traversal', await makeTar([{ name: 'a/../../evil.json', data: rec }]), 'application/x-tar', 400, /path traversal/],
      ['tar symlink', await makeTar([{ name: 'link.json', type: 'symlink' }]), 'application/x-tar', 400, /links are not accepted/],
      [
        'zip bomb (ratio)',
        makeZip([{ name: 'bomb.json', data: Buffer.alloc(4 * 1024 * 1024, 0x20) }]),
        'application/zip',
        400,
        /expands \d+x \(more than 200x\)/,
      ],
      ['gzip bomb', await makeTar([{ name: 'bomb.json', data: Buffer.alloc(6 * 1024 * 1024, 0x20) }], true), 'application/gzip', 400, /expands more than 200x/],
      ['not an archive', Buffer.from('hello, not an archive'), 'application/octet-stream', 400, /^body: not a zip, tar or tar.gz archive$/],
      ['empty body', Buffer.alloc(0), 'application/zip', 400, /^body: empty/],
      ['truncated zip', osvZip([npm('GHSA-trun-cate-dzip', 'x', '1.0.0')]).subarray(0, 60), 'application/zip', 400, /not a readable zip|not a zip/],
    ];
    for (const [name, body, type, status, re] of cases) {
      const res = await post(body, type);
      expect(res.statusCode, `${name}: ${res.body}`).toBe(status);
      expect(JSON.parse(res.body).error, name).toMatch(re);
    }
    expect(await advisories()).toEqual(before);
    expect(Number((await sql<{ n: string }>`SELECT count(*) AS n FROM vuln_imports`.execute(db())).rows[0]!.n)).toBe(importsBefore);
  });

  it('a zip entry whose inflated bytes do not match its header is skipped, not a 500', async () => {
    const rec = JSON.stringify(npm('GHSA-lies-lies-lies', 'liar', '1.0.0'));
    const res = await post(
      makeZip([
        { name: 'liar.json', data: rec, declaredSize: 10 },
        { name: 'ok.json', data: JSON.stringify(npm('GHSA-true-true-true', 'honest', '1.0.0')) },
      ]),
    );
    expect(res.statusCode, res.body).toBe(201);
    expect(JSON.parse(res.body)).toMatchObject({ added: 1, skipped: 1 });
  });

  it('resumes after a crash between batches: the cursor is kept and the re-POST applies only the rest', async () => {
    const recs = [npm('GHSA-resu-me00-0001', 'r1', '1.0.0'), npm('GHSA-resu-me00-0002', 'r2', '1.0.0'), npm('GHSA-resu-me00-0003', 'r3', '1.0.0')];
    const zip = osvZip(recs);
    const digest = `sha256:${createHash('sha256').update(zip).digest('hex')}` as const;
    // what a process killed after its first batch leaves behind: the import row and one batch
    const scope = { tenant: f.t.tenantId, actor: systemActor('test'), now: new Date() };
    const started = await runUnitOfWork(db(), scope, (uow) => startOsvImport(uow, { source: 'osv:npm', digest, entries: 3 }));
    const first = readOsvRecord(Buffer.from(JSON.stringify(recs[0])));
    if ('skip' in first) throw new Error(first.skip);
    await runUnitOfWork(db(), scope, (uow) =>
      importOsvBatch(uow, { importId: started.row.id, from: 0, to: 1, items: [{ index: 0, name: 'GHSA-resu-me00-0001.json', advisory: first }] }),
    );
    const res = await post(zip);
    expect(res.statusCode, res.body).toBe(200);
    expect(JSON.parse(res.body)).toMatchObject({ id: started.row.id, state: 'completed', entries_done: 3, added: 3, unchanged: 0 });
    const batches = await sql<{
      detail: any;
    }>`SELECT detail FROM audit_events WHERE action = 'vuln-feed.import.batch' AND target = ${`vuln-import:${started.row.id}`} ORDER BY at, id`.execute(db());
    expect(batches.rows.map((r) => [r.detail.from, r.detail.to]).sort((a, b) => a[0] - b[0])).toEqual([
      [0, 1],
      [1, 3],
    ]);
  });

  it('imports the KEV catalog (idempotent; a newer catalog marks dropped entries removed); bad catalogs are a 400 naming the path', async () => {
    const kev = (c: unknown, headers = f.admin) => f.t.app.inject({ method: 'POST', url: '/api/v1/vuln-feeds/kev', headers, payload: c as object });
    const c1 = kevCatalog([{ cve: 'CVE-2024-1000' }, { cve: 'CVE-2024-2000' }]);
    const r1 = await kev(c1);
    expect(r1.statusCode, r1.body).toBe(201);
    expect(JSON.parse(r1.body)).toMatchObject({ kind: 'kev', catalog_version: '2024.06.01', added: 2 });
    expect((await kev(c1)).statusCode).toBe(200);
    const c2 = kevCatalog([{ cve: 'CVE-2024-1000' }], { version: '2024.06.02', released: '2024-06-02T12:00:00.000Z' });
    expect(JSON.parse((await kev(c2)).body)).toMatchObject({ unchanged: 1 });
    const live = await sql<{ cve_id: string }>`SELECT cve_id FROM vuln_kev WHERE removed_at IS NULL`.execute(db());
    expect(live.rows).toEqual([{ cve_id: 'CVE-2024-1000' }]);
    expect((await f.api('GET', '/api/v1/vuln-feeds')).body.kev).toMatchObject({ catalog_version: '2024.06.02', entries: 1 });

    const bad = structuredClone(c1) as any;
    bad.vulnerabilities[1].cveID = 'CVE-24-1';
    const r = await kev(bad);
    expect(r.statusCode).toBe(400);
    expect(JSON.parse(r.body).error).toBe('vulnerabilities[1].cveID: must match pattern "^CVE-[0-9]{4}-[0-9]{4,19}$"');
    const missing = await kev({ catalogVersion: 'x' });
    expect(JSON.parse(missing.body).error).toBe('dateReleased: is required');
  });

  it('feeds are an administrator act; reading their state needs evidence.read', async () => {
    const operator = await f.t.loginAs('operator');
    const res = await post(osvZip([npm('GHSA-oper-ator-0001', 'x', '1.0.0')]), 'application/zip', 'osv', operator);
    expect(res.statusCode).toBe(403);
    expect(JSON.parse(res.body).error).toBe('missing permission: admin.manage');
    const viewer = await f.t.loginAs('viewer');
    expect((await f.api('GET', '/api/v1/vuln-feeds', undefined, viewer)).status).toBe(200);
  });
});
