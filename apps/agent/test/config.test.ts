import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { generateKeyPair } from '@svc/release-core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig, loadTrustKeys, isAgentError } from '../src/index.js';
import { tempDir } from './helpers/tools.js';

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => ({ dir, cleanup } = await tempDir()));
afterEach(() => cleanup());

const full = (trustDir: string) => ({
  SVC_RELEASE_TENANT: '7d3c2a1e-4b5f-4c6d-8e9f-0a1b2c3d4e5f',
  SVC_RELEASE_PRODUCT: 'svc-dev',
  SVC_RELEASE_PROFILE: 'linux-arm64',
  SVC_RELEASE_TRUST_DIR: trustDir,
});

describe('agent configuration (spec 2.2)', () => {
  it('all four release settings: accepted', () => {
    const c = loadConfig({ ...full(dir), SVC_AGENT_DATA_DIR: dir, SVC_AGENT_SERVER: 'svc.example:8443' });
    expect(c.release).toEqual({ tenant: '7d3c2a1e-4b5f-4c6d-8e9f-0a1b2c3d4e5f', product: 'svc-dev', profile: 'linux-arm64', trustDir: dir });
    expect(c.serverAddress).toBe('svc.example:8443');
  });

  it('the tenant may be typed in upper case: it is kept in canonical lowercase, the form releases carry', () => {
    const c = loadConfig({ ...full(dir), SVC_RELEASE_TENANT: '7D3C2A1E-4B5F-4C6D-8E9F-0A1B2C3D4E5F' });
    expect(c.release?.tenant).toBe('7d3c2a1e-4b5f-4c6d-8e9f-0a1b2c3d4e5f');
  });

  it('bad product and profile are named with the pattern they must match', () => {
    expect(() => loadConfig({ ...full(dir), SVC_RELEASE_PRODUCT: 'Svc', SVC_RELEASE_PROFILE: '-arm' })).toThrow(
      'invalid agent configuration: SVC_RELEASE_PRODUCT: must match ^[a-z0-9][a-z0-9._-]{0,63}$; SVC_RELEASE_PROFILE: must match ^[a-z0-9][a-z0-9._-]{0,63}$',
    );
  });

  it('none: legacy only (release pointers fail closed later)', () => {
    expect(loadConfig({}).release).toBeNull();
  });

  it('a partial set is a startup error naming exactly the missing settings', () => {
    const { SVC_RELEASE_PROFILE: _p, SVC_RELEASE_TRUST_DIR: _t, ...partial } = full(dir);
    let err: unknown;
    try {
      loadConfig(partial);
    } catch (e) {
      err = e;
    }
    expect(isAgentError(err, 'RELEASE_SETTINGS_PARTIAL')).toBe(true);
    expect((err as Error).message).toContain('missing: SVC_RELEASE_PROFILE, SVC_RELEASE_TRUST_DIR');
  });

  it('connection mode: per-check-in with a 30 s idle close unless set; persistent on request; bad values named', () => {
    expect(loadConfig({}).connection).toEqual({ mode: 'per-check-in', idleCloseS: 30 });
    expect(loadConfig({ SVC_AGENT_CONNECTION: 'persistent', SVC_AGENT_IDLE_CLOSE_S: '5' }).connection).toEqual({ mode: 'persistent', idleCloseS: 5 });
    expect(() => loadConfig({ SVC_AGENT_CONNECTION: 'always', SVC_AGENT_IDLE_CLOSE_S: '0' })).toThrow(
      'invalid agent configuration: SVC_AGENT_CONNECTION: must be per-check-in or persistent; SVC_AGENT_IDLE_CLOSE_S: must be an integer number of seconds 1..3600',
    );
    expect(() => loadConfig({ SVC_AGENT_IDLE_CLOSE_S: '2.5' })).toThrow(/SVC_AGENT_IDLE_CLOSE_S/);
  });

  it('download attempts without progress: 10 unless set; 1..100; bad values named', () => {
    expect(loadConfig({}).downloadAttempts).toBe(10);
    expect(loadConfig({ SVC_AGENT_DOWNLOAD_ATTEMPTS: '3' }).downloadAttempts).toBe(3);
    for (const bad of ['0', '101', '2.5', 'many', '-1']) {
      expect(() => loadConfig({ SVC_AGENT_DOWNLOAD_ATTEMPTS: bad })).toThrow(
        'invalid agent configuration: SVC_AGENT_DOWNLOAD_ATTEMPTS: must be an integer 1..100',
      );
    }
  });

  it('bad values are named', () => {
    expect(() => loadConfig({ ...full(dir), SVC_RELEASE_TENANT: 'acme', SVC_AGENT_SERVER: 'nope' })).toThrow(/SVC_RELEASE_TENANT.*SVC_AGENT_SERVER/);
  });
});

describe('trust directory', () => {
  async function snapshot(d: string) {
    const out: string[] = [];
    for (const n of (await readdir(d)).sort()) {
      const s = await stat(join(d, n));
      out.push(
        `${n} ${s.mode} ${s.mtimeMs} ${createHash('sha256')
          .update(await readFile(join(d, n)))
          .digest('hex')}`,
      );
    }
    return out;
  }

  it('loads the Ed25519 SPKI PEM keys and leaves the directory exactly as it was', async () => {
    const trust = join(dir, 'trust');
    await mkdir(trust);
    const k1 = generateKeyPair('ed25519').publicKey;
    const k2 = generateKeyPair('ed25519').publicKey;
    await writeFile(join(trust, 'a.pem'), k1.pem);
    await writeFile(join(trust, 'b.pem'), k2.pem);
    await writeFile(join(trust, 'README'), 'not a key');
    const before = await snapshot(trust);
    const keys = await loadTrustKeys(trust);
    expect(keys.map((k) => k.keyid)).toEqual([k1.keyid, k2.keyid]);
    expect(await snapshot(trust)).toEqual(before);
  });

  it('refuses P-256 keys, garbage and an empty directory, naming the file', async () => {
    const trust = join(dir, 'trust');
    await mkdir(trust);
    await expect(loadTrustKeys(trust)).rejects.toMatchObject({ code: 'TRUST_DIR_INVALID' });
    await writeFile(join(trust, 'p256.pem'), generateKeyPair('p256').publicKey.pem);
    await expect(loadTrustKeys(trust)).rejects.toMatchObject({ code: 'TRUST_DIR_INVALID', field: 'p256.pem' });
    await writeFile(join(trust, 'p256.pem'), 'garbage');
    await expect(loadTrustKeys(trust)).rejects.toMatchObject({ code: 'TRUST_DIR_INVALID', field: 'p256.pem' });
    await expect(loadTrustKeys(join(dir, 'missing'))).rejects.toMatchObject({ code: 'TRUST_DIR_INVALID' });
  });
});
