import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { RELEASE_ERROR_CODES, ReleaseError } from '@svc/release-core';
import { describe, expect, it } from 'vitest';
import { toHttpError } from '../../src/errors/handler.js';
import { BLOB_ERROR_CODES, BlobError } from '../../src/blobs/errors.js';
import { SERVER_ERROR_CODES, ServerError } from '../../src/errors/server-error.js';
import { SIGNING_REPO_ERROR_CODES, SigningRepoError } from '../../src/signing-repo/errors.js';
import { ERROR_TABLE } from '../../src/errors/table.js';

const doc = readFileSync(resolve(import.meta.dirname, '../../../../docs/errors.md'), 'utf8');
const rows = [...doc.matchAll(/^\| `([A-Z_]+)` \| (\d{3}) \| `([A-Z_]+)` \|/gm)].map((m) => ({ code: m[1]!, http: Number(m[2]), grpc: m[3]! }));

describe('error table <-> docs/errors.md', () => {
  it('every code in the table is documented with the same statuses', () => {
    for (const [code, m] of Object.entries(ERROR_TABLE)) {
      expect(
        rows.find((r) => r.code === code),
        code,
      ).toEqual({ code, http: m.http, grpc: m.grpc });
    }
  });

  it('every documented code is in the table', () => {
    expect(rows.length).toBe(Object.keys(ERROR_TABLE).length);
    for (const r of rows) expect(Object.hasOwn(ERROR_TABLE, r.code), r.code).toBe(true);
  });

  it('the table covers every server, release-core, signing-repository and blob code, and nothing else', () => {
    expect(new Set(Object.keys(ERROR_TABLE))).toEqual(
      new Set([...SERVER_ERROR_CODES, ...RELEASE_ERROR_CODES, ...SIGNING_REPO_ERROR_CODES, ...BLOB_ERROR_CODES]),
    );
  });

  it('thrown errors are answered with the mapped status and a one-line body', () => {
    for (const code of SERVER_ERROR_CODES) {
      const { status, body } = toHttpError(new ServerError(code, `x: ${code}`));
      expect(status).toBe(ERROR_TABLE[code].http);
      expect(body.error).toBe(status === 500 || ERROR_TABLE[code].grpc === 'INTERNAL' ? 'internal error' : `x: ${code}`);
    }
    for (const code of RELEASE_ERROR_CODES) {
      const { status, body } = toHttpError(new ReleaseError(code, `refused: ${code}`, { issues: [{ path: 'a.b', message: 'bad' }] }));
      expect(status).toBe(ERROR_TABLE[code].http);
      expect(body.error).toBe(`${code}: refused: ${code}: a.b: bad`);
    }
    for (const code of SIGNING_REPO_ERROR_CODES) {
      const { status, body } = toHttpError(new SigningRepoError(code, 'why'));
      expect(status).toBe(ERROR_TABLE[code].http);
      expect(body.error).toBe(status === 500 || ERROR_TABLE[code].grpc === 'INTERNAL' ? 'internal error' : `${code}: why`);
    }
    for (const code of BLOB_ERROR_CODES) {
      const { status, body } = toHttpError(new BlobError(code, 'why'));
      expect(status).toBe(ERROR_TABLE[code].http);
      expect(body.error).toBe(status === 500 || ERROR_TABLE[code].grpc === 'INTERNAL' ? 'internal error' : `${code}: why`);
    }
    expect(toHttpError(new Error('secret detail'))).toEqual({ status: 500, body: { error: 'internal error' } });
  });
});
