import { createHash, createPublicKey } from 'node:crypto';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectFailure, openssl, requireTool, runCli, tempDir } from './helpers/cli.js';

const hasOpenssl = requireTool('openssl');

describe('svc-release keygen', () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  beforeAll(async () => {
    tmp = await tempDir();
  });
  afterAll(() => tmp.cleanup());

  it('writes PREFIX.key (PKCS#8, 0600) and PREFIX.pub (SPKI) and prints the key id', async () => {
    const prefix = join(tmp.dir, 'release');
    const r = await runCli(['keygen', '--out', prefix]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const keyPem = await readFile(`${prefix}.key`, 'utf8');
    const pubPem = await readFile(`${prefix}.pub`, 'utf8');
    expect(keyPem).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
    expect(pubPem).toMatch(/^-----BEGIN PUBLIC KEY-----\n/);
    expect((await stat(`${prefix}.key`)).mode & 0o777).toBe(0o600);
    // contracts §1: keyid = sha256 over the SPKI DER, computed here independently.
    const spki = createPublicKey(pubPem).export({ type: 'spki', format: 'der' });
    expect(createPublicKey(pubPem).asymmetricKeyType).toBe('ed25519');
    const keyid = `sha256:${createHash('sha256').update(spki).digest('hex')}`;
    expect(r.stdout.split('\n')[0]).toBe(`keyid: ${keyid}`);
  });

  it.skipIf(!hasOpenssl)('interoperates with OpenSSL: `openssl pkey -pubout` of PREFIX.key equals PREFIX.pub', async () => {
    const prefix = join(tmp.dir, 'interop');
    expect((await runCli(['keygen', '--out', prefix])).code).toBe(0);
    const derived = openssl(['pkey', '-in', `${prefix}.key`, '-pubout']).toString('utf8');
    expect(derived).toBe(await readFile(`${prefix}.pub`, 'utf8'));
    const text = openssl(['pkey', '-in', `${prefix}.key`, '-noout', '-text']).toString('utf8');
    expect(text).toMatch(/ED25519 Private-Key/);
  });

  it('--json prints one object with the key id and both paths', async () => {
    const prefix = join(tmp.dir, 'json');
    const r = await runCli(['keygen', '--out', prefix, '--json']);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as Record<string, string>;
    expect(out).toEqual({ keyid: expect.stringMatching(/^sha256:[0-9a-f]{64}$/), private_key: `${prefix}.key`, public_key: `${prefix}.pub` });
  });

  it('never replaces an existing key without --force (exit 1, nothing written)', async () => {
    const prefix = join(tmp.dir, 'existing');
    await writeFile(`${prefix}.pub`, 'keep me');
    const r = await runCli(['keygen', '--out', prefix]);
    expectFailure(r, 1, /^refused: OUTPUT_FAILED: cannot write .*existing\.pub: already exists \(use --force/);
    await expect(stat(`${prefix}.key`)).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await readFile(`${prefix}.pub`, 'utf8')).toBe('keep me');

    await writeFile(`${prefix}.key`, 'old', { mode: 0o644 });
    const forced = await runCli(['keygen', '--out', prefix, '--force']);
    expect(forced.code).toBe(0);
    expect(await readFile(`${prefix}.key`, 'utf8')).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    // the mode is tightened even though the file already existed
    expect((await stat(`${prefix}.key`)).mode & 0o777).toBe(0o600);
  });

  it('an unwritable directory is refused with one line', async () => {
    const r = await runCli(['keygen', '--out', join(tmp.dir, 'no', 'such', 'dir', 'k')]);
    expectFailure(r, 1, /^refused: OUTPUT_FAILED: cannot write .*: no such file/);
  });
});
