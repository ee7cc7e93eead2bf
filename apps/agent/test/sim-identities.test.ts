import { execFileSync } from 'node:child_process';
import { createPrivateKey, createPublicKey, verify } from 'node:crypto';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { privateKeyFromPkcs8Der } from '@svc/release-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseSimArgs } from '../src/sim/args.js';
import { IdentityArena } from '../src/sim/identity-arena.js';
import { IdentityCacheError, loadIdentityCache, saveIdentityCache, serverCaFingerprint } from '../src/sim/identity-cache.js';
import { keyPemFromScalar, pkcs8FromScalar, simKeyAndCsr } from '../src/sim/sim-key.js';
import { makeChannelPki, type ChannelPki } from './helpers/mtls-device-service.js';
import { requireTool, tempDir } from './helpers/tools.js';

/**
 * The simulator's identity pieces without a server (the e2e suite runs them against one,
 * `fleet-simulator-identities.test.ts`): its node:crypto CSR as OpenSSL reads it, the private
 * scalar as OpenSSL and release-core read it, the arena, and the cache file's round trip and
 * refusals.
 */
let root: { dir: string; cleanup: () => Promise<void> };
let pki: ChannelPki;
beforeAll(async () => {
  root = await tempDir();
  pki = await makeChannelPki(root.dir);
});
afterAll(() => root?.cleanup());

const haveOpenssl = requireTool('openssl', 'openssl');

describe('simulator keys and CSRs', () => {
  it.skipIf(!haveOpenssl)(
    'makes a PKCS#10 CSR OpenSSL verifies, CN = device name, key P-256; the scalar is the same key for OpenSSL and release-core',
    async () => {
      const { scalar, csrDer } = await simKeyAndCsr('sim-000042');
      expect(scalar).toHaveLength(32);
      const file = join(root.dir, 'req.der');
      await writeFile(file, csrDer);
      const text = execFileSync('openssl', ['req', '-inform', 'DER', '-in', file, '-noout', '-verify', '-subject', '-text'], {
        encoding: 'utf8',
        stdio: 'pipe',
      });
      expect(text).toMatch(/subject=CN\s*=\s*sim-000042/);
      expect(text).toMatch(/NIST CURVE: P-256|prime256v1/);
      // the CSR's key is the scalar's: sign with the scalar (as OpenSSL loads it for TLS), verify with the CSR's key
      const pub = createPublicKey({
        key: execFileSync('openssl', ['req', '-inform', 'DER', '-in', file, '-noout', '-pubkey'], { encoding: 'utf8' }),
        format: 'pem',
      });
      const keyFile = join(root.dir, 'key.pem');
      await writeFile(keyFile, keyPemFromScalar(scalar), { mode: 0o600 });
      const sig = execFileSync('openssl', ['dgst', '-sha256', '-sign', keyFile, file]);
      expect(verify('sha256', await readFile(file), pub, sig)).toBe(true);
      expect(createPrivateKey(keyPemFromScalar(scalar)).asymmetricKeyDetails).toEqual({ namedCurve: 'prime256v1' });
      const key = privateKeyFromPkcs8Der(pkcs8FromScalar(scalar));
      expect(Buffer.from(key.publicKey.spki)).toEqual(pub.export({ format: 'der', type: 'spki' }));
    },
  );
});

describe('identity arena and cache', () => {
  const cert = (n: number) => Buffer.alloc(400 + n, n);
  const fill = (arena: IdentityArena, indexes: number[]) => {
    for (const i of indexes) arena.set(i, Buffer.alloc(32, i + 1), cert(i), i % 2 === 0 ? 'tenant-a' : 'tenant-b');
  };

  it('keeps scalars, certificates and tenants by index, growing the certificate arena; counts bytes per device', () => {
    const arena = new IdentityArena(3000);
    fill(arena, [...Array(3000).keys()]);
    expect(arena.count).toBe(3000);
    expect(arena.scalar(2999)).toEqual(Buffer.alloc(32, 3000 % 256));
    expect(arena.certDer(1234)).toEqual(cert(1234));
    expect([arena.tenant(10), arena.tenant(11)]).toEqual(['tenant-a', 'tenant-b']);
    expect(arena.bytesUsed / 3000).toBeCloseTo(40 + 400 + 1499.5, 0);
    expect(() => arena.set(0, Buffer.alloc(31), cert(0), 't')).toThrow(/private scalar must be 32 bytes/);
  });

  it('writes the cache 0600 and reads it back for the same server, CA and prefix; refuses another one naming the difference, and a file that is not a cache', async () => {
    const file = join(root.dir, 'ids.bin');
    const header = { server: '127.0.0.1:8443', server_ca_sha256: serverCaFingerprint(pki.serverCa), prefix: 'sim' };
    const arena = new IdentityArena(10);
    fill(arena, [0, 1, 2, 5, 9]);
    await saveIdentityCache(file, header, arena);
    expect((await stat(file)).mode & 0o777).toBe(0o600);

    const back = new IdentityArena(10);
    expect(await loadIdentityCache(file, header, back)).toEqual(['tenant-a', 'tenant-b']);
    expect([...Array(10).keys()].filter((i) => back.has(i))).toEqual([0, 1, 2, 5, 9]);
    for (const i of [0, 1, 2, 5, 9]) {
      expect(back.scalar(i)).toEqual(arena.scalar(i));
      expect(back.certDer(i)).toEqual(arena.certDer(i));
      expect(back.tenant(i)).toBe(arena.tenant(i));
    }
    // a smaller run loads the devices it has room for
    const small = new IdentityArena(3);
    await loadIdentityCache(file, header, small);
    expect(small.count).toBe(3);
    expect(await loadIdentityCache(join(root.dir, 'absent.bin'), header, new IdentityArena(1))).toBeUndefined();

    const refusal = async (expectHeader: typeof header) => {
      const e = await loadIdentityCache(file, expectHeader, new IdentityArena(10)).catch((err: unknown) => err);
      expect(e).toBeInstanceOf(IdentityCacheError);
      return e as IdentityCacheError;
    };
    const otherCa = await refusal({ ...header, server_ca_sha256: serverCaFingerprint(pki.deviceCa) });
    expect(otherCa.code).toBe('IDENTITY_CACHE_MISMATCH');
    expect(otherCa.message).toBe(
      `--identities ${file}: enrolled with --server-ca (SHA-256) "${header.server_ca_sha256}", this run has "${serverCaFingerprint(pki.deviceCa)}"; use another file (or delete this one) to enroll afresh`,
    );
    expect((await refusal({ ...header, server: '127.0.0.1:9443' })).message).toMatch(
      /enrolled with --server "127\.0\.0\.1:8443", this run has "127\.0\.0\.1:9443"/,
    );
    expect((await refusal({ ...header, prefix: 'other' })).message).toMatch(/enrolled with --prefix "sim", this run has "other"/);

    const bytes = await readFile(file);
    await writeFile(file, bytes.subarray(0, bytes.length - 10));
    const truncated = await refusal(header);
    expect([truncated.code, truncated.message]).toEqual([
      'IDENTITY_CACHE_CORRUPT',
      `--identities ${file}: not a simulator identity cache (truncated certificate of device 9)`,
    ]);
    await writeFile(file, 'not a cache at all');
    expect((await refusal(header)).message).toMatch(/not a simulator identity cache \(no SVCSIMID header\)$/);
  });

  it('parses the bulk-enrollment flags', () => {
    expect(parseSimArgs(['--token', 't'], {})).toMatchObject({ concurrency: 256, enrollLanes: 4, identities: undefined, jitterPct: 0 });
    expect(parseSimArgs(['--token', 't', '--enroll-lanes', '2', '--identities', '/tmp/x.bin', '--jitter', '10'], {})).toMatchObject({
      enrollLanes: 2,
      identities: '/tmp/x.bin',
      jitterPct: 10,
    });
    expect(() => parseSimArgs(['--token', 't', '--jitter', '51'], {})).toThrow(/^--jitter: must be an integer 0\.\.50/);
    expect(() => parseSimArgs(['--token', 't', '--enroll-lanes', '0'], {})).toThrow(/^--enroll-lanes: must be an integer 1\.\.64/);
  });

  it('runs the turns on one thread unless --threads asks for more, which needs per-check-in connections', () => {
    expect(parseSimArgs(['--token', 't'], {}).threads).toBe(1);
    expect(parseSimArgs(['--token', 't', '--connection', 'per-check-in', '--threads', '2'], {}).threads).toBe(2);
    expect(() => parseSimArgs(['--token', 't', '--threads', '2'], {})).toThrow(/^--threads: more than 1 needs --connection per-check-in$/);
    expect(() => parseSimArgs(['--token', 't', '--connection', 'per-check-in', '--threads', '0'], {})).toThrow(/^--threads: must be an integer 1\.\.64/);
  });
});
