import { createHash, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Key, Metadata, MetadataKind, Root } from '@tufjs/models';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectFailure, runCli, tempDir } from './helpers/cli.js';

/** An Ed25519 key as TUF names it: key id = sha256 of the canonical {keytype, scheme, keyval} (computed here independently). */
function tufKey(): { id: string; key: Key; privateKey: KeyObject } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(12).toString('hex');
  const id = createHash('sha256').update(`{"keytype":"ed25519","keyval":{"public":"${raw}"},"scheme":"ed25519"}`).digest('hex');
  return { id, key: new Key({ keyID: id, keyType: 'ed25519', scheme: 'ed25519', keyVal: { public: raw } }), privateKey };
}

type K = ReturnType<typeof tufKey>;

function root(version: number, rootKeys: K[], threshold: number, online: Record<'targets' | 'snapshot' | 'timestamp', K>): Root {
  const r = new Root({ version, specVersion: '1.0.31', expires: '2036-01-01T00:00:00Z', consistentSnapshot: true });
  for (const k of rootKeys) r.addKey(k.key, 'root');
  for (const role of ['targets', 'snapshot', 'timestamp'] as const) r.addKey(online[role].key, role);
  const json = r.toJSON() as { roles: Record<string, { threshold: number }> };
  json.roles['root']!.threshold = threshold;
  return Root.fromJSON(json);
}

const parse = async (path: string) => Metadata.fromJSON(MetadataKind.Root, JSON.parse(await readFile(path, 'utf8')) as never);
const pem = (k: K) => k.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();

describe('svc-release sign-root', () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  const keys = { a: tufKey(), b: tufKey(), c: tufKey(), targets: tufKey(), targets2: tufKey(), snapshot: tufKey(), timestamp: tufKey(), stranger: tufKey() };
  const file = (name: string) => join(tmp.dir, name);
  beforeAll(async () => {
    tmp = await tempDir();
    for (const [name, k] of Object.entries(keys)) await writeFile(file(`${name}.key`), pem(k), { mode: 0o600 });
    const online = { targets: keys.targets, snapshot: keys.snapshot, timestamp: keys.timestamp };
    const write = (name: string, r: Root) => writeFile(file(name), JSON.stringify(new Metadata(r).toJSON()));
    await write('1.root.json', root(1, [keys.a], 1, online));
    await write('2.root.unsigned.json', root(2, [keys.a], 1, { ...online, targets: keys.targets2 }));
    await write('3.root.unsigned.json', root(3, [keys.a], 1, online));
    // a 2-of-3 root and its successor
    await write('t1.root.json', root(1, [keys.a, keys.b, keys.c], 2, online));
    await write('t2.root.unsigned.json', root(2, [keys.a, keys.b, keys.c], 2, { ...online, targets: keys.targets2 }));
  });
  afterAll(() => tmp.cleanup());

  it('signs root N+1 so that it verifies against root N and itself, and says what changes', async () => {
    const r = await runCli(['sign-root', file('2.root.unsigned.json'), '--trusted', file('1.root.json'), '--key', file('a.key'), '--out', file('2.root.json')]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout.split('\n')).toEqual([
      'root version: 2',
      `targets: ${keys.targets.id} -> ${keys.targets2.id}`,
      'signatures of root 1: 1 of 1 needed',
      'signatures of root 2: 1 of 1 needed',
      '',
    ]);
    const trusted = await parse(file('1.root.json'));
    const signed = await parse(file('2.root.json'));
    // TUF client workflow 5.3.4 and 5.3.5, as a device checks them
    expect(() => trusted.verifyDelegate('root', signed)).not.toThrow();
    expect(() => signed.verifyDelegate('root', signed)).not.toThrow();
    expect(signed.signed.toJSON()).toEqual((await parse(file('2.root.unsigned.json'))).signed.toJSON());
  });

  it('writes the exact document to stdout without --out, the summary as JSON on stderr', async () => {
    const r = await runCli(['sign-root', file('2.root.unsigned.json'), '--trusted', file('1.root.json'), '--key', file('a.key'), '--json']);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as { signatures: { keyid: string }[] };
    expect(doc.signatures.map((s) => s.keyid)).toEqual([keys.a.id]);
    expect(JSON.parse(r.stderr)).toEqual({
      version: 2,
      signed_by: [keys.a.id],
      changes: [{ role: 'targets', from: [keys.targets.id], to: [keys.targets2.id] }],
      threshold_trusted: { valid: 1, threshold: 1 },
      threshold_new: { valid: 1, threshold: 1 },
    });
  });

  it('lets holders of a threshold sign one after another', async () => {
    const first = await runCli([
      'sign-root',
      file('t2.root.unsigned.json'),
      '--trusted',
      file('t1.root.json'),
      '--key',
      file('a.key'),
      '--out',
      file('t2.a.json'),
    ]);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('signatures of root 1: 1 of 2 needed (more root key holders must sign)');
    const partial = await parse(file('t2.a.json'));
    const trusted = await parse(file('t1.root.json'));
    expect(() => trusted.verifyDelegate('root', partial)).toThrow();
    const second = await runCli(['sign-root', file('t2.a.json'), '--trusted', file('t1.root.json'), '--key', file('c.key'), '--out', file('t2.root.json')]);
    expect(second.code).toBe(0);
    expect(second.stdout).toContain('signatures of root 1: 2 of 2 needed\n');
    const signed = await parse(file('t2.root.json'));
    expect(Object.keys(signed.signatures).sort()).toEqual([keys.a.id, keys.c.id].sort());
    expect(() => trusted.verifyDelegate('root', signed)).not.toThrow();
    expect(() => signed.verifyDelegate('root', signed)).not.toThrow();
  });

  it('refuses a key that is no root key, a version that does not follow, and a document that is not a root (exit 1, one line)', async () => {
    const base = ['--trusted', file('1.root.json')];
    expectFailure(
      await runCli(['sign-root', file('2.root.unsigned.json'), ...base, '--key', file('stranger.key'), '--out', file('x.json')]),
      1,
      new RegExp(`^refused: ROOT_KEY_UNKNOWN: key .*stranger\\.key \\(TUF key id ${keys.stranger.id}\\) is not a root key of root version 1 or 2$`),
    );
    expectFailure(
      await runCli(['sign-root', file('3.root.unsigned.json'), ...base, '--key', file('a.key')]),
      1,
      /^refused: ROOT_INVALID: root .*3\.root\.unsigned\.json is version 3, the trusted root is version 1: sign version 2$/,
    );
    await writeFile(file('targets.json'), JSON.stringify({ signed: { _type: 'targets' }, signatures: [] }));
    expectFailure(
      await runCli(['sign-root', file('targets.json'), ...base, '--key', file('a.key')]),
      1,
      /^refused: ROOT_INVALID: root .*targets\.json: not TUF root metadata/,
    );
    await writeFile(file('garbage.json'), 'not json');
    expectFailure(await runCli(['sign-root', file('garbage.json'), ...base, '--key', file('a.key')]), 1, /^refused: INPUT_NOT_JSON: /);
    expectFailure(await runCli(['sign-root', file('2.root.unsigned.json'), '--key', file('a.key')]), 2, /^usage: USAGE: .*trusted/);
    expectFailure(await runCli(['sign-root', file('2.root.unsigned.json'), ...base, '--key', file('missing.key')]), 2, /^usage: INPUT_UNREADABLE: key\[0\] /);
  });
});
