import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { canonicalize, envelopeBytes, generateKeyPair, signEnvelope, type PrivateKey } from '@svc/release-core';
import { writeTar } from '@svc/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectFailure, runCli, tempDir } from './helpers/cli.js';
import { TENANT } from './helpers/fixtures.js';

const TYPE = 'svc.case-evidence.v1';
const CASE = '7d1f3c52-5a0b-4d57-9c3e-1f2a3b4c5d6e';

/** An archive shaped like the server's export: files, then manifest.json and its DSSE envelope. */
function archive(
  key: PrivateKey,
  files: [string, Buffer][],
  over: { manifest?: Record<string, unknown>; listed?: [string, Buffer][] } = {},
): [string, Buffer][] {
  const manifest = {
    type: TYPE,
    tenant: TENANT,
    case: { id: CASE, kind: 'exploited_vulnerability', state: 'reportable', title: 'Heap overflow' },
    exported_at: '2026-10-01T12:00:00.000Z',
    exported_by: 'alice@example.test',
    key: { keyid: key.publicKey.keyid, algorithm: 'ed25519' },
    files: (over.listed ?? files).map(([path, bytes]) => ({
      path,
      length: bytes.length,
      digest: `sha256:${createHash('sha256').update(bytes).digest('hex')}`,
    })),
    ...over.manifest,
  };
  const payload = canonicalize(manifest);
  return [...files, ['manifest.json', Buffer.from(payload)], ['manifest.dsse.json', Buffer.from(envelopeBytes(signEnvelope(TYPE, payload, key)))]];
}

describe('svc-release verify-evidence', () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  const p = (name: string) => join(tmp.dir, name);
  const key = generateKeyPair('ed25519');
  const other = generateKeyPair('ed25519');
  const files: [string, Buffer][] = [
    ['case.json', Buffer.from('{"case":{}}\n')],
    ['submissions/001-early_warning-x.json', Buffer.from('{"stage":"early_warning"}')],
    ['attachments/a/notes.txt', Buffer.from('triage notes\n')],
  ];
  const write = async (name: string, entries: [string, Buffer][]) => writeFile(p(name), writeTar(entries));
  const args = (file: string, ...extra: string[]) => ['verify-evidence', p(file), '--key', p('evidence.pub'), ...extra];

  beforeAll(async () => {
    tmp = await tempDir();
    await writeFile(p('evidence.pub'), key.publicKey.pem);
    await writeFile(p('other.pub'), other.publicKey.pem);
    await write('good.tar', archive(key, files));
  });
  afterAll(() => tmp.cleanup());

  it('exit 0 with a summary: case, tenant, export, files, signing key, manifest digest', async () => {
    const r = await runCli(args('good.tar', '--tenant', TENANT));
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toBe(`case: ${CASE} (exploited_vulnerability, reportable) Heap overflow`);
    expect(lines).toContain(`tenant: ${TENANT}`);
    expect(lines).toContain('exported: 2026-10-01T12:00:00.000Z by alice@example.test');
    expect(lines).toContain('files: 3 verified');
    expect(lines).toContain(`signed by: ${key.publicKey.keyid}`);
  });

  it('--json prints one object', async () => {
    const r = await runCli(args('good.tar', '--json'));
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      case: CASE,
      tenant: TENANT,
      files: 3,
      keyid: key.publicKey.keyid,
      manifest_digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
    });
  });

  /** The untampered archive's bytes, for the tamper classes that cut or replace the tar itself. */
  const goodTar = async () => writeTar(archive(key, files));
  const entries = (list: () => [string, Buffer][]) => async () => writeTar(list());
  const replaced = (name: string, bytes: Buffer) => entries(() => archive(key, files).map(([n, b]): [string, Buffer] => [n, n === name ? bytes : b]));
  const without = (name: string) => entries(() => archive(key, files).filter(([n]) => n !== name));

  // Every tamper class: each exits 1 with one stderr line naming what is wrong.
  it.each<[string, () => Promise<Buffer>, RegExp]>([
    [
      'a byte changed in a file',
      replaced('attachments/a/notes.txt', Buffer.from('triage notez\n')),
      /^refused: EVIDENCE_INVALID: attachments\/a\/notes\.txt: sha256:[0-9a-f]{64} \(13 bytes\) does not match the manifest's/,
    ],
    ['a file removed', without('case.json'), /^refused: EVIDENCE_INVALID: case\.json: listed in the manifest, missing from the archive$/],
    [
      'a file added',
      entries(() => [['extra.bin', Buffer.from('x')], ...archive(key, files)]),
      /^refused: EVIDENCE_INVALID: extra\.bin: in the archive, not in the signed manifest$/,
    ],
    ['a file twice', entries(() => [files[0]!, ...archive(key, files)]), /^refused: EVIDENCE_INVALID: case\.json: appears twice/],
    ['the manifest edited', replaced('manifest.json', Buffer.from('{}')), /^refused: EVIDENCE_INVALID: manifest\.json: differs from the signed manifest$/],
    [
      'the manifest re-serialized (same JSON, other bytes)',
      entries(() => {
        const a = archive(key, files);
        const manifest = JSON.parse(a.find(([n]) => n === 'manifest.json')![1].toString('utf8')) as unknown;
        return a.map(([n, b]): [string, Buffer] => [n, n === 'manifest.json' ? Buffer.from(JSON.stringify(manifest, null, 2)) : b]);
      }),
      /^refused: EVIDENCE_INVALID: manifest\.json: differs from the signed manifest$/,
    ],
    ['the manifest removed', without('manifest.json'), /^refused: EVIDENCE_INVALID: manifest\.json: missing from the archive$/],
    ['the envelope removed', without('manifest.dsse.json'), /^refused: EVIDENCE_INVALID: manifest\.dsse\.json: missing from the archive$/],
    ['both manifest files removed', entries(() => files), /^refused: EVIDENCE_INVALID: manifest\.dsse\.json: missing from the archive$/],
    ['a signature by another key', entries(() => archive(other, files)), /^refused: KEY_UNTRUSTED: /],
    [
      'another payload type',
      entries(() => {
        const a = archive(key, files);
        const payload = a.find(([n]) => n === 'manifest.json')![1];
        return a.map(([n, b]): [string, Buffer] => [
          n,
          n === 'manifest.dsse.json' ? Buffer.from(envelopeBytes(signEnvelope('svc.release.v1', payload, key))) : b,
        ]);
      }),
      /^refused: PAYLOAD_TYPE_UNKNOWN: /,
    ],
    [
      'a manifest of another type',
      entries(() => archive(key, files, { manifest: { type: 'svc.other.v1' } })),
      /^refused: EVIDENCE_INVALID: manifest: type must be svc\.case-evidence\.v1$/,
    ],
    [
      'not a tar',
      () => Promise.resolve(Buffer.from('this is not a tar archive at all, just text that goes on for a while '.repeat(20))),
      /^refused: EVIDENCE_INVALID: not a readable tar archive/,
    ],
    ['an empty file', () => Promise.resolve(Buffer.alloc(0)), /^refused: EVIDENCE_INVALID: manifest\.dsse\.json: missing from the archive$/],
    [
      'a tar truncated inside an entry',
      async () => {
        const whole = await goodTar();
        return whole.subarray(0, whole.length - 2048 - 100);
      },
      /^refused: EVIDENCE_INVALID: not a readable tar archive/,
    ],
    [
      'a tar truncated after its first entry',
      async () => (await goodTar()).subarray(0, 1024),
      /^refused: EVIDENCE_INVALID: manifest\.dsse\.json: missing from the archive$/,
    ],
  ])('exit 1 on %s', async (_name, bytes, error) => {
    await writeFile(p('bad.tar'), await bytes());
    expectFailure(await runCli(args('bad.tar')), 1, error);
  });

  it('exit 1 on another tenant', async () => {
    expectFailure(await runCli(args('good.tar', '--tenant', '00000000-0000-4000-8000-000000000000')), 1, /^refused: EVIDENCE_INVALID: manifest: names tenant /);
  });

  it('exit 2 on a missing archive, a missing key file or a missing flag', async () => {
    expectFailure(await runCli(args('nope.tar')), 2, /^usage: INPUT_UNREADABLE: archive .*nope\.tar: no such file/);
    expectFailure(await runCli(['verify-evidence', p('good.tar'), '--key', p('nope.pub')]), 2, /^usage: INPUT_UNREADABLE: public key/);
    expectFailure(await runCli(['verify-evidence', p('good.tar')]), 2, /^usage: USAGE: .*key/);
  });

  describe('--keys: the published key history', () => {
    const older = generateKeyPair('ed25519');
    const entry = (k: PrivateKey, seq: number, from: string, until: string | null) => ({
      seq,
      keyid: k.publicKey.keyid,
      algorithm: 'ed25519',
      public_key_pem: k.publicKey.pem,
      valid_from: from,
      valid_until: until,
    });
    // `older` signed until 2026-09-01, `key` from then on; the fixtures' exports are dated 2026-10-01
    const history = {
      evidence_keys: [entry(older, 1, '2026-01-01T00:00:00.000Z', '2026-09-01T00:00:00.000Z'), entry(key, 2, '2026-09-01T00:00:00.000Z', null)],
    };
    const withKeys = (file: string, keys = 'keys.json') => ['verify-evidence', p(file), '--keys', p(keys), '--json'];
    const dated = (k: PrivateKey, at: string) => archive(k, files, { manifest: { exported_at: at } });

    beforeAll(async () => {
      await writeFile(p('keys.json'), JSON.stringify(history));
      await write('older.tar', dated(older, '2026-06-01T00:00:00.000Z'));
      await write('older-late.tar', dated(older, '2026-10-01T00:00:00.000Z'));
      await write('current-early.tar', dated(key, '2026-08-01T00:00:00.000Z'));
    });

    it('exit 0 for exports of the retired and the current key, each within its validity', async () => {
      const old = await runCli(withKeys('older.tar'));
      expect(old.stderr).toBe('');
      expect(JSON.parse(old.stdout)).toMatchObject({ keyid: older.publicKey.keyid, exported_at: '2026-06-01T00:00:00.000Z' });
      const current = await runCli(withKeys('good.tar'));
      expect(current.stderr).toBe('');
      expect(JSON.parse(current.stdout)).toMatchObject({ keyid: key.publicKey.keyid });
    });

    it('exit 1 when the export time lies outside the signing key validity', async () => {
      expectFailure(
        await runCli(withKeys('older-late.tar')),
        1,
        /^refused: EVIDENCE_INVALID: manifest: exported at 2026-10-01T00:00:00.000Z, outside the validity of evidence key 1 /,
      );
      expectFailure(
        await runCli(withKeys('current-early.tar')),
        1,
        /^refused: EVIDENCE_INVALID: manifest: exported at 2026-08-01T00:00:00.000Z, outside the validity of evidence key 2 /,
      );
    });

    it('exit 1 on a signature by a key outside the history, or one claiming a listed key id', async () => {
      await write('other.tar', archive(other, files));
      expectFailure(await runCli(withKeys('other.tar')), 1, /^refused: KEY_UNTRUSTED: /);
      const forged = archive(other, files, { manifest: { key: { keyid: older.publicKey.keyid, algorithm: 'ed25519' } } }).map(([n, b]): [string, Buffer] => {
        if (n !== 'manifest.dsse.json') return [n, b];
        const env = JSON.parse(b.toString('utf8')) as { signatures: { keyid: string }[] };
        env.signatures = env.signatures.map((sig) => ({ ...sig, keyid: older.publicKey.keyid }));
        return [n, Buffer.from(JSON.stringify(env))];
      });
      await write('forged.tar', forged);
      expectFailure(await runCli(withKeys('forged.tar')), 1, /^refused: KEY_UNTRUSTED: not signed by the evidence key it names/);
    });

    it('exit 1 on a history that is not one, exit 2 on both or neither of --key and --keys', async () => {
      await writeFile(
        p('bad-keys.json'),
        JSON.stringify({ evidence_keys: [{ ...entry(key, 1, '2026-01-01T00:00:00Z', null), keyid: older.publicKey.keyid }] }),
      );
      expectFailure(
        await runCli(withKeys('good.tar', 'bad-keys.json')),
        1,
        /^refused: EVIDENCE_INVALID: key history: evidence_keys\[0\]\.keyid .* is not the key id of its public key/,
      );
      await writeFile(p('empty-keys.json'), '{"evidence_keys":[]}');
      expectFailure(
        await runCli(withKeys('good.tar', 'empty-keys.json')),
        1,
        /^refused: EVIDENCE_INVALID: key history: evidence_keys must be a non-empty array/,
      );
      expectFailure(await runCli([...withKeys('good.tar'), '--key', p('evidence.pub')]), 2, /^usage: USAGE: /);
    });
  });
});
