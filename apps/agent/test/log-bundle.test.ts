import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { readTar } from '@svc/test-kit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { collectLogBundle, logBundleSettings } from '../src/channel/log-bundle.js';
import { tempDir } from './helpers/tools.js';

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => ({ dir, cleanup } = await tempDir()));
afterEach(() => cleanup());

/** The regular files of a ustar archive as text (what `tar -x` would write). */
const untar = (buf: Buffer): Map<string, string> => new Map([...readTar(buf)].map(([name, bytes]) => [name, bytes.toString('utf8')]));

describe('log bundle settings', () => {
  it('has bounded defaults', () => {
    expect(logBundleSettings({})).toEqual({ unit: 'svc-agent.service', journalDir: null, files: [], maxBytes: 2 * 1024 * 1024, maxFiles: 8, windowS: 86_400 });
  });

  it('names every bad setting at once', () => {
    expect(() =>
      logBundleSettings({
        SVC_AGENT_LOG_FILES: '/var/log/a.log,relative.log',
        SVC_AGENT_LOG_MAX_BYTES: '12',
        SVC_AGENT_LOG_MAX_FILES: 'x',
        SVC_AGENT_LOG_WINDOW_S: '99999999',
        SVC_AGENT_LOG_UNIT: 'a b',
      }),
    ).toThrow(
      expect.objectContaining({
        code: 'CONFIG_INVALID',
        field: 'SVC_AGENT_LOG_UNIT,SVC_AGENT_LOG_FILES,SVC_AGENT_LOG_MAX_BYTES,SVC_AGENT_LOG_MAX_FILES,SVC_AGENT_LOG_WINDOW_S',
      }),
    );
  });
});

describe('collectLogBundle', () => {
  it('without journalctl says so in the manifest and still bundles the files', async () => {
    await writeFile(join(dir, 'a.log'), 'one\ntwo\n');
    const path = process.env.PATH;
    process.env.PATH = dir; // no journalctl here
    let bundle;
    try {
      bundle = await collectLogBundle({ ...logBundleSettings({}), files: [join(dir, 'a.log')] }, { device: 'd1', logRequest: 'r1' });
    } finally {
      process.env.PATH = path;
    }
    const files = untar(gunzipSync(bundle.bytes));
    expect([...files.keys()]).toEqual(['manifest.json', 'files/1-a.log']);
    expect(files.get('files/1-a.log')).toBe('one\ntwo\n');
    expect(bundle.manifest.sources[0]).toEqual({
      source: 'journald',
      name: 'svc-agent.service',
      bytes: 0,
      truncated: false,
      skipped: 'journalctl not found (no journald on this device)',
    });
    expect(JSON.parse(files.get('manifest.json')!)).toEqual(bundle.manifest);
  });

  it('shares the size cap: a small source leaves its share to the next', async () => {
    await writeFile(join(dir, 'small.log'), 'small\n');
    await writeFile(join(dir, 'big.log'), Array.from({ length: 1000 }, (_, i) => `line ${i}`).join('\n') + '\n');
    const s = { ...logBundleSettings({ SVC_AGENT_LOG_MAX_BYTES: '4096' }), files: [join(dir, 'small.log'), join(dir, 'big.log')] };
    const path = process.env.PATH;
    process.env.PATH = dir;
    let bundle;
    try {
      bundle = await collectLogBundle(s, { device: 'd1', logRequest: 'r1' });
    } finally {
      process.env.PATH = path;
    }
    const files = untar(gunzipSync(bundle.bytes));
    const big = files.get('files/2-big.log')!;
    // journald took nothing, small.log 6 bytes: big.log gets the rest of the 4096, cut at a line start
    expect(big.length).toBeGreaterThan(4096 - 6 - 16);
    expect(big.length).toBeLessThanOrEqual(4096 - 6);
    expect(big.startsWith('line ')).toBe(true);
    expect(big.endsWith('line 999\n')).toBe(true);
    expect(bundle.manifest.sources.find((x) => x.name.endsWith('big.log'))).toMatchObject({ truncated: true, bytes: big.length });
  });
});
