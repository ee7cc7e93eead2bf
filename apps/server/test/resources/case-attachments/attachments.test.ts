/**
 * Case attachments: every bound (413 or 400 naming it, nothing half-stored), the content type
 * verified from the bytes, SHA-256 recorded, names sanitized, downloads, immutability and
 * redaction as a record.
 */
import { createHash } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sanitizeFilename } from '../../../src/resources/case-attachments/limits.js';
import { createCasesFixture, type CasesFixture } from '../../fixtures/cases.js';
import { attachmentMultipart } from '../../fixtures/cases-multipart.js';
import { availableDrivers } from '../../helpers/store.js';

const LIMITS = { fileBytes: 20_000, filesPerCase: 3, caseBytes: 30_000 };
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');
const PDF = Buffer.from('%PDF-1.4\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n');

describe('file names', () => {
  it.each([
    ['../../etc/passwd', 'passwd'],
    ['C:\\Users\\x\\report.pdf', 'report.pdf'],
    ['..hidden', 'hidden'],
    ['a\u0000b\u202ec.txt', 'abc.txt'],
    ['rm -rf $HOME;.sh', 'rm -rf _HOME_.sh'],
    ['Überprüfung "final".pdf', 'Überprüfung _final_.pdf'],
    ['', 'attachment'],
    ['...', 'attachment'],
    [undefined, 'attachment'],
  ])('%j -> %j', (raw, want) => {
    expect(sanitizeFilename(raw, 200)).toBe(want);
  });

  it('shortens a long name keeping its extension', () => {
    const name = sanitizeFilename(`${'a'.repeat(300)}.tar.gz`, 200);
    expect(name).toHaveLength(200);
    expect(name.endsWith('.gz')).toBe(true);
  });
});

describe.each(availableDrivers())('case attachments on %s', (driver) => {
  let f: CasesFixture;
  let tmpDir: string;
  beforeAll(async () => {
    f = await createCasesFixture(driver, { evidence: { attachmentLimits: LIMITS } });
    tmpDir = join(f.dataDir, 'blobs', 'tmp');
  });
  afterAll(async () => {
    await f?.dispose();
  });

  const attach = async (caseId: string, parts: Parameters<typeof attachmentMultipart>[0], headers = f.admin) => {
    const { payload, contentType } = attachmentMultipart(parts);
    const res = await f.t.app.inject({
      method: 'POST',
      url: `/api/v1/cases/${caseId}/attachments`,
      headers: { ...headers, 'content-type': contentType },
      payload,
    });
    return { status: res.statusCode, body: JSON.parse(res.body) };
  };
  const file = (body: Buffer | string, type?: string, filename = 'f.bin') => ({ name: 'file', filename, ...(type === undefined ? {} : { type }), body });
  const rows = async (caseId: string) =>
    Number((await sql<{ n: string }>`SELECT count(*) AS n FROM case_attachments WHERE case_id = ${caseId}`.execute(f.t.testStore.store.db)).rows[0]!.n);
  const blobCount = async () => (await readdir(join(f.dataDir, 'blobs', 'sha256')).catch(() => [])).length;

  it('stores the bytes through the blob store with their SHA-256, the verified type and the sanitized name; downloads them back', async () => {
    const c = await f.openCase();
    const a = await attach(c.id, [{ name: 'description', body: 'Screenshot of the exploit' }, file(PNG, 'image/png', '../shots/exploit 1.png')]);
    expect(a.status).toBe(201);
    expect(a.body).toMatchObject({
      filename: 'exploit 1.png',
      content_type: 'image/png',
      length: PNG.length,
      digest: `sha256:${createHash('sha256').update(PNG).digest('hex')}`,
      description: 'Screenshot of the exploit',
      redaction: null,
    });
    const got = await f.t.app.inject({ method: 'GET', url: `/api/v1/cases/${c.id}/attachments/${a.body.id}/content`, headers: f.admin });
    expect(got.statusCode).toBe(200);
    expect(got.rawPayload.equals(PNG)).toBe(true);
    expect(got.headers['content-type']).toBe('image/png');
    expect(got.headers['x-content-type-options']).toBe('nosniff');
    expect(got.headers['content-disposition']).toBe(`attachment; filename="exploit 1.png"; filename*=UTF-8''exploit%201.png`);
    // application/octet-stream lets the bytes decide
    expect((await attach(c.id, [file(PDF, 'application/octet-stream', 'x')])).body.content_type).toBe('application/pdf');
    const json = await attach(c.id, [file('{"ioc": ["1.2.3.4"]}', 'application/json', 'iocs.json')]);
    expect(json.body.content_type).toBe('application/json');
    const list = (await f.api('GET', `/api/v1/cases/${c.id}/attachments`)).body;
    expect(list).toMatchObject({ total: 3, counts: { attached: 3, redacted: 0 } });
  });

  it('verifies the type from the bytes, not the header: 400 naming the problem, nothing stored', async () => {
    const c = await f.openCase();
    const blobsBefore = await blobCount();
    const cases: [ReturnType<typeof file>, RegExp][] = [
      [file('plain text', 'application/pdf'), /declared application\/pdf but the bytes are text/],
      [file(PNG, 'image/jpeg'), /declared image\/jpeg but the bytes are image\/png/],
      [file(Buffer.from([0x4d, 0x5a, 0x90, 0x00, 0x03]), 'application/octet-stream'), /none of the allowed types/],
      [file(Buffer.from([0x00, 0x01, 0x02]), 'text/plain'), /not UTF-8 text/],
      [file(Buffer.from([0xc3, 0x28, 0x41]), 'text/csv'), /not UTF-8 text/],
      [file('not json', 'application/json'), /do not start a JSON object or array/],
      [file('MZ', 'application/x-msdownload'), /"application\/x-msdownload" is not allowed/],
      [file('<svg/>', 'image/svg+xml'), /is not allowed/],
      [file('', 'text/plain'), /file: is empty/],
    ];
    for (const [part, error] of cases) {
      const r = await attach(c.id, [part]);
      expect(r.status, String(error)).toBe(400);
      expect(r.body.error).toMatch(error);
    }
    // a PDF header after the first 8 KiB of text does not make it a PDF; text after a PDF header is a PDF
    expect((await attach(c.id, [file(Buffer.concat([Buffer.alloc(9000, 0x41), PDF]), 'application/pdf')])).status).toBe(400);
    expect(await rows(c.id)).toBe(0);
    expect(await blobCount()).toBe(blobsBefore);
    expect(await readdir(tmpDir), 'blob store temp files').toEqual([]);
  });

  it('bounds: per file (413 naming fileBytes), per case total (413 naming caseBytes), per case count (400 naming filesPerCase); nothing half-stored', async () => {
    const c = await f.openCase();
    const blobsBefore = await blobCount();
    const big = await attach(c.id, [file(Buffer.alloc(LIMITS.fileBytes + 1, 0x61), 'text/plain')]);
    expect(big.status).toBe(413);
    expect(big.body.error).toBe('file: larger than the per-file limit of 20000 bytes (fileBytes)');
    expect(await blobCount()).toBe(blobsBefore);
    expect(await readdir(tmpDir), 'blob store temp files').toEqual([]);
    expect((await attach(c.id, [file(Buffer.alloc(LIMITS.fileBytes, 0x62), 'text/plain')])).status).toBe(201);
    const total = await attach(c.id, [file(Buffer.alloc(10_001, 0x63), 'text/plain')]);
    expect(total.status).toBe(413);
    expect(total.body.error).toBe("file: larger than the case's total attachment limit of 30000 bytes (caseBytes; 10000 bytes left)");
    expect(await rows(c.id)).toBe(1);
    expect((await attach(c.id, [file('two', 'text/plain')])).status).toBe(201);
    expect((await attach(c.id, [file('three', 'text/plain')])).status).toBe(201);
    const count = await attach(c.id, [file('four', 'text/plain')]);
    expect(count.status).toBe(400);
    expect(count.body.error).toBe('file: the case already has 3 attachments, the limit of attachments per case (filesPerCase 3)');
    expect(await rows(c.id)).toBe(3);
    // a redaction frees its place and its bytes
    const first = (await f.api('GET', `/api/v1/cases/${c.id}/attachments`)).body.attachments[0];
    expect((await f.api('POST', `/api/v1/cases/${c.id}/attachments/${first.id}/redaction`, { reason: 'Attached to the wrong case.' })).status).toBe(200);
    expect((await attach(c.id, [file(Buffer.alloc(LIMITS.fileBytes, 0x64), 'text/plain')])).status).toBe(201);
  });

  it('bad multipart bodies are 400s naming the field, never 500s', async () => {
    const c = await f.openCase();
    const bad: [Parameters<typeof attachmentMultipart>[0], RegExp][] = [
      [[{ name: 'description', body: 'no file' }], /^file: is required/],
      [[{ name: 'bogus', body: 'x' }, file('x', 'text/plain')], /^bogus: unknown field/],
      [[{ name: 'other', filename: 'x.txt', type: 'text/plain', body: 'x' }], /^other: unknown file field/],
      [[{ name: 'description', body: 'x'.repeat(2001) }, file('x', 'text/plain')], /^description: at most 2000 characters/],
      [[{ name: 'description', body: 'a' }, { name: 'description', body: 'b' }, { name: 'description', body: 'c' }, file('x', 'text/plain')], /^body: /],
      [[file('x', 'text/plain'), file('y', 'text/plain')], /^body: /],
    ];
    for (const [parts, error] of bad) {
      const r = await attach(c.id, parts);
      expect(r.status, String(error)).toBe(400);
      expect(r.body.error).toMatch(error);
    }
    const json = await f.api('POST', `/api/v1/cases/${c.id}/attachments`, { file: 'x' });
    expect(json.status).toBe(400);
    expect(await rows(c.id)).toBe(0);
  });

  it('immutable: the database refuses changes; redaction keeps the record, stops serving the bytes (410) and is audited', async () => {
    const c = await f.openCase();
    const a = (await attach(c.id, [file('secret\n', 'text/plain', 'dump.txt')])).body;
    await expect(sql`UPDATE case_attachments SET filename = 'x' WHERE id = ${a.id}`.execute(f.t.testStore.store.db)).rejects.toThrow(/append-only/);
    const viewer = await f.t.apiKeyHeaders('viewer');
    expect((await f.api('POST', `/api/v1/cases/${c.id}/attachments/${a.id}/redaction`, { reason: 'x' }, viewer)).status).toBe(403);
    expect((await attach(c.id, [file('x', 'text/plain')], viewer)).status).toBe(403);
    expect((await f.api('POST', `/api/v1/cases/${c.id}/attachments/${a.id}/redaction`, {})).status).toBe(400);
    const red = await f.api('POST', `/api/v1/cases/${c.id}/attachments/${a.id}/redaction`, { reason: 'Contains customer data.' });
    expect(red.status).toBe(200);
    expect(red.body).toMatchObject({ id: a.id, digest: a.digest, redaction: { reason: 'Contains customer data.' } });
    const gone = await f.api('GET', `/api/v1/cases/${c.id}/attachments/${a.id}/content`);
    expect(gone.status).toBe(410);
    expect(gone.body.error).toMatch(/was redacted/);
    expect((await f.api('POST', `/api/v1/cases/${c.id}/attachments/${a.id}/redaction`, { reason: 'again' })).status).toBe(409);
    expect((await f.api('GET', `/api/v1/cases/${c.id}/attachments`)).body.counts).toEqual({ attached: 0, redacted: 1 });
    const audit = (await f.api('GET', `/api/v1/cases/${c.id}/audit`)).body.events.map((e: any) => [e.action, e.detail.attachment_id ?? null]);
    expect(audit).toEqual([
      ['case.open', null],
      ['case.attachment-add', a.id],
      ['case.attachment-redact', a.id],
    ]);
    // another tenant sees nothing
    const other = await f.t.apiKeyHeaders('admin', await f.t.newTenant());
    expect((await f.api('GET', `/api/v1/cases/${c.id}/attachments/${a.id}`, undefined, other)).status).toBe(404);
    expect((await attach(c.id, [file('x', 'text/plain')], other)).status).toBe(404);
  });
});
