import { createPublicKey, verify as nodeVerify } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectFailure, openssl, requireTool, runCli, tempDir } from './helpers/cli.js';
import { AT_VALID, OTHER_TENANT, PRODUCT, TENANT, handSignedEnvelope, jcs, pae, releasePayload, sha256Hex } from './helpers/fixtures.js';

const hasOpenssl = requireTool('openssl');

/** Round trip with OpenSSL-made Ed25519 keys: sign, then verify and every refusal. */
describe.skipIf(!hasOpenssl)('svc-release sign and verify', () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  const p = (name: string) => join(tmp.dir, name);
  let keyid: string;
  const verifyArgs = (env: string, ...extra: string[]) => ['verify', env, '--key', p('k.pub'), '--tenant', TENANT, '--product', PRODUCT, ...extra];

  beforeAll(async () => {
    tmp = await tempDir();
    for (const k of ['k', 'other']) {
      openssl(['genpkey', '-algorithm', 'ed25519', '-out', p(`${k}.key`)]);
      openssl(['pkey', '-in', p(`${k}.key`), '-pubout', '-out', p(`${k}.pub`)]);
    }
    keyid = `sha256:${sha256Hex(createPublicKey(await readFile(p('k.pub'), 'utf8')).export({ type: 'spki', format: 'der' }))}`;
    // Pretty-printed on purpose: sign must canonicalize.
    await writeFile(p('payload.json'), JSON.stringify(releasePayload(), null, 2));
    const r = await runCli(['sign', p('payload.json'), '--key', p('k.key'), '--out', p('env.json')]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  });
  afterAll(() => tmp.cleanup());

  it('sign writes a canonical envelope whose signature OpenSSL-made keys verify independently', async () => {
    const bytes = await readFile(p('env.json'));
    const env = JSON.parse(bytes.toString('utf8')) as { payloadType: string; payload: string; signatures: { keyid: string; sig: string }[] };
    // contracts §1: the file is exactly JCS(envelope), the TUF target bytes
    expect(bytes.equals(jcs(env))).toBe(true);
    expect(env.payloadType).toBe('svc.release.v1');
    const payload = Buffer.from(env.payload, 'base64');
    expect(payload.equals(jcs(releasePayload()))).toBe(true);
    expect(env.signatures).toHaveLength(1);
    expect(env.signatures[0]!.keyid).toBe(keyid);
    const pub = createPublicKey(await readFile(p('k.pub'), 'utf8'));
    expect(nodeVerify(null, pae(env.payloadType, payload), pub, Buffer.from(env.signatures[0]!.sig, 'base64'))).toBe(true);
  });

  it('sign to stdout prints the same bytes (Ed25519 is deterministic)', async () => {
    const r = await runCli(['sign', p('payload.json'), '--key', p('k.key')]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(await readFile(p('env.json'), 'utf8'));
  });

  it('verify: exit 0 and both digests on their own lines, equal to independently computed ones', async () => {
    const r = await runCli(verifyArgs(p('env.json'), '--at', AT_VALID));
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const env = JSON.parse(await readFile(p('env.json'), 'utf8')) as { payload: string };
    const payloadDigest = `sha256:${sha256Hex(Buffer.from(env.payload, 'base64'))}`;
    const envelopeDigest = `sha256:${sha256Hex(jcs(env))}`;
    const lines = r.stdout.split('\n');
    expect(lines).toContain(`payload digest: ${payloadDigest}`);
    expect(lines).toContain(`envelope digest: ${envelopeDigest}`);

    const j = await runCli(verifyArgs(p('env.json'), '--at', AT_VALID, '--json'));
    expect(j.code).toBe(0);
    expect(JSON.parse(j.stdout)).toMatchObject({
      payload_digest: payloadDigest,
      envelope_digest: envelopeDigest,
      keyid,
      product: PRODUCT,
      version: '1.4.0',
    });
    expect(j.stdout.trim().split('\n')).toHaveLength(1);
  });

  it('--key may be repeated: any of a set of trusted keys', async () => {
    const r = await runCli(['verify', p('env.json'), '--key', p('other.pub'), '--key', p('k.pub'), '--tenant', TENANT, '--product', PRODUCT, '--at', AT_VALID]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  });

  it('without --at it verifies at the current time', async () => {
    const now = Date.now();
    const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const validity = { not_before: iso(now - 3600_000), not_after: iso(now + 3600_000), max_offline_age_s: 3600 };
    await writeFile(p('now.json'), JSON.stringify(releasePayload({ validity })));
    expect((await runCli(['sign', p('now.json'), '--key', p('k.key'), '--out', p('now.env.json')])).code).toBe(0);
    expect((await runCli(verifyArgs(p('now.env.json')))).code).toBe(0);
    // the fixed 2026 window is judged against the real clock too: refused once it has passed
    const fixed = await runCli(verifyArgs(p('env.json')));
    if (now >= Date.parse('2027-01-01T00:00:00Z')) expectFailure(fixed, 1, /^refused: EXPIRED: /);
  });

  describe('refusals: exit 1, one stderr line naming the code', () => {
    it('wrong key', async () => {
      const r = await runCli(['verify', p('env.json'), '--key', p('other.pub'), '--tenant', TENANT, '--product', PRODUCT, '--at', AT_VALID]);
      expectFailure(r, 1, /^refused: KEY_UNTRUSTED: /);
    });

    it('wrong tenant', async () => {
      const r = await runCli(['verify', p('env.json'), '--key', p('k.pub'), '--tenant', OTHER_TENANT, '--product', PRODUCT, '--at', AT_VALID]);
      expectFailure(r, 1, /^refused: TENANT_MISMATCH: /);
    });

    it('wrong product', async () => {
      const r = await runCli(['verify', p('env.json'), '--key', p('k.pub'), '--tenant', TENANT, '--product', 'thermostat', '--at', AT_VALID]);
      expectFailure(r, 1, /^refused: PRODUCT_MISMATCH: /);
    });

    it('expired (--at after not_after)', async () => {
      expectFailure(await runCli(verifyArgs(p('env.json'), '--at', '2027-03-01T00:00:00Z')), 1, /^refused: EXPIRED: /);
    });

    it('not yet valid (--at before not_before)', async () => {
      expectFailure(await runCli(verifyArgs(p('env.json'), '--at', '2025-10-01T00:00:00Z')), 1, /^refused: NOT_YET_VALID: /);
    });

    it('tampered payload', async () => {
      const env = JSON.parse(await readFile(p('env.json'), 'utf8')) as { payload: string };
      const tampered = jcs(releasePayload({ product: PRODUCT, release: { version: '6.6.6' } }));
      await writeFile(p('tampered.json'), JSON.stringify({ ...env, payload: tampered.toString('base64') }));
      expectFailure(await runCli(verifyArgs(p('tampered.json'), '--at', AT_VALID)), 1, /^refused: SIGNATURE_INVALID: /);
    });

    it('non-canonical payload, even when correctly signed', async () => {
      const bytes = Buffer.from(JSON.stringify(releasePayload(), null, 2));
      const env = handSignedEnvelope('svc.release.v1', bytes, await readFile(p('k.key'), 'utf8'), keyid);
      await writeFile(p('noncanon.json'), JSON.stringify(env));
      expectFailure(await runCli(verifyArgs(p('noncanon.json'), '--at', AT_VALID)), 1, /^refused: PAYLOAD_NOT_CANONICAL: /);
    });

    it('an envelope that is not JSON', async () => {
      await writeFile(p('garbage.json'), 'not json {');
      expectFailure(await runCli(verifyArgs(p('garbage.json'), '--at', AT_VALID)), 1, /^refused: ENVELOPE_MALFORMED: /);
    });

    it('a key file that is not a public key', async () => {
      const r = await runCli(['verify', p('env.json'), '--key', p('payload.json'), '--tenant', TENANT, '--product', PRODUCT, '--at', AT_VALID]);
      expectFailure(r, 1, /^refused: KEY_INVALID: /);
    });

    it('sign: an invalid payload lists every bad field path', async () => {
      const bad = releasePayload({ validity: undefined });
      const components = bad.components as Record<string, unknown>[];
      components[0]!.kind = 'os-package';
      await writeFile(p('bad.json'), JSON.stringify(bad));
      const r = await runCli(['sign', p('bad.json'), '--key', p('k.key'), '--out', p('bad.env.json')]);
      expectFailure(r, 1, /^refused: PAYLOAD_INVALID: .*components\[0\]\.kind.*validity|^refused: PAYLOAD_INVALID: .*validity.*components\[0\]\.kind/);
      await expect(readFile(p('bad.env.json'))).rejects.toMatchObject({ code: 'ENOENT' });
    });

    it('sign: a payload that is not JSON', async () => {
      await writeFile(p('notjson.json'), '{"tenant":');
      expectFailure(await runCli(['sign', p('notjson.json'), '--key', p('k.key')]), 1, /^refused: INPUT_NOT_JSON: payload .*notjson\.json: not JSON/);
    });
  });
});
