import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliRun, expectFailure, runCli, tempDir } from './helpers/cli.js';

/*
 * The language-neutral vectors of release-core (packages/release-core/vectors) run
 * through the real binary: the CLI must accept and refuse exactly what the library does, with
 * the vector's code on its one stderr line. Vectors whose expectation depends on device- or
 * server-only options the CLI does not have (compatibility profile, offline age, the mTLS
 * connection certificate) are left to release-core's own tests.
 */
const VECTORS = resolve(import.meta.dirname, '..', '..', '..', 'packages', 'release-core', 'vectors');
const present = existsSync(join(VECTORS, 'release-envelopes.json'));
if (!present) console.warn(`SKIPPING vector tests: ${VECTORS} has no release-envelopes.json`);

interface Verify {
  tenant: string;
  product?: string;
  device?: string;
  now: string;
  profile?: string;
  lastOnlineAt?: string;
  connectionCertificate?: string;
}
interface EnvelopeVector {
  name: string;
  envelope: unknown;
  verify: Verify;
  code?: string;
  payload_digest?: string;
  envelope_digest?: string;
}
const DEVICE_OR_SERVER_ONLY = (v: Verify) => v.lastOnlineAt !== undefined || v.connectionCertificate !== undefined;

const load = async <T>(file: string): Promise<T> => JSON.parse(await readFile(join(VECTORS, file), 'utf8')) as T;

/**
 * A backstop, not a bound on speed: each of these runs one child per vector (dozens), two at
 * a time, and a busy machine takes seconds per child.
 */
const VECTOR_RUN_TIMEOUT_MS = 300_000;

/** Runs at most two children at a time: the machine is shared. */
async function pool<T, R>(items: T[], fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all([worker(), worker()]);
  return out;
}

describe.skipIf(!present)('release-core vectors through svc-release', () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  const p = (name: string) => join(tmp.dir, name);
  beforeAll(async () => {
    tmp = await tempDir();
  });
  afterAll(() => tmp.cleanup());

  it(
    'verify: good envelopes exit 0 with the vector digests, bad ones exit 1 naming the vector code',
    async () => {
      const v = await load<{ trusted_keys: string[]; good: EnvelopeVector[]; bad: EnvelopeVector[] }>('release-envelopes.json');
      const keyArgs: string[] = [];
      for (const [i, pem] of v.trusted_keys.entries()) {
        await writeFile(p(`trusted-${i}.pub`), pem);
        keyArgs.push('--key', p(`trusted-${i}.pub`));
      }
      // profile only narrows acceptance on the device; the CLI has no profile, so a
      // "wrong profile" vector is not a refusal here.
      const bad = v.bad.filter((b) => !DEVICE_OR_SERVER_ONLY(b.verify) && b.verify.profile === undefined);
      expect(bad.length).toBeGreaterThan(15);
      const cases = [...v.good.map((g) => ({ ...g, good: true })), ...bad.map((b) => ({ ...b, good: false }))];
      const runs = await pool(cases, async (c, i): Promise<CliRun> => {
        await writeFile(p(`env-${i}.json`), JSON.stringify(c.envelope));
        return runCli(['verify', p(`env-${i}.json`), ...keyArgs, '--tenant', c.verify.tenant, '--product', c.verify.product!, '--at', c.verify.now, '--json']);
      });
      cases.forEach((c, i) => {
        const r = runs[i]!;
        if (c.good) {
          expect({ name: c.name, code: r.code, stderr: r.stderr }).toEqual({ name: c.name, code: 0, stderr: '' });
          expect(JSON.parse(r.stdout)).toMatchObject({ payload_digest: c.payload_digest, envelope_digest: c.envelope_digest });
        } else {
          expect({ name: c.name, code: r.code }).toEqual({ name: c.name, code: 1 });
          expectFailure(r, 1, new RegExp(`^refused: ${c.code}: `));
        }
      });
    },
    VECTOR_RUN_TIMEOUT_MS,
  );

  it(
    'verify-receipt: good receipts exit 0, bad ones exit 1 naming the vector code',
    async () => {
      const v = await load<{ ca_pem: string; good: EnvelopeVector[]; bad: EnvelopeVector[] }>('receipts.json');
      await writeFile(p('ca.pem'), v.ca_pem);
      const bad = v.bad.filter((b) => !DEVICE_OR_SERVER_ONLY(b.verify));
      expect(bad.length).toBeGreaterThan(10);
      const cases = [...v.good.map((g) => ({ ...g, good: true })), ...bad.map((b) => ({ ...b, good: false }))];
      const runs = await pool(cases, async (c, i) => {
        await writeFile(p(`receipt-${i}.json`), JSON.stringify(c.envelope));
        return runCli([
          'verify-receipt',
          p(`receipt-${i}.json`),
          '--ca',
          p('ca.pem'),
          '--tenant',
          c.verify.tenant,
          '--device',
          c.verify.device!,
          '--at',
          c.verify.now,
          '--json',
        ]);
      });
      cases.forEach((c, i) => {
        const r = runs[i]!;
        if (c.good) {
          expect({ name: c.name, code: r.code, stderr: r.stderr }).toEqual({ name: c.name, code: 0, stderr: '' });
          expect(JSON.parse(r.stdout)).toMatchObject({ device: c.verify.device, tenant: c.verify.tenant });
        } else {
          expect({ name: c.name, code: r.code }).toEqual({ name: c.name, code: 1 });
          expectFailure(r, 1, new RegExp(`^refused: ${c.code}: `));
        }
      });
    },
    VECTOR_RUN_TIMEOUT_MS,
  );

  it('sign: good payloads sign and verify; an invalid one lists every issue path', async () => {
    const v = await load<{
      tenant: string;
      product: string;
      good: Record<string, unknown>;
      bad: { name: string; payload: unknown; issues: { path: string }[] }[];
    }>('release-payloads.json');
    const env = await load<{ good: EnvelopeVector[] }>('release-envelopes.json');
    await writeFile(p('authorizer.key'), await readFile(join(VECTORS, 'keys', 'authorizer.key.pem')));
    await writeFile(p('authorizer.pub'), await readFile(join(VECTORS, 'keys', 'authorizer.pub.pem')));
    const at = env.good[0]!.verify.now;
    await pool(Object.entries(v.good), async ([name, payload]) => {
      await writeFile(p(`payload-${name}.json`), JSON.stringify(payload, null, 2));
      const s = await runCli(['sign', p(`payload-${name}.json`), '--key', p('authorizer.key'), '--out', p(`signed-${name}.json`)]);
      expect({ name, code: s.code, stderr: s.stderr }).toEqual({ name, code: 0, stderr: '' });
      const r = await runCli(['verify', p(`signed-${name}.json`), '--key', p('authorizer.pub'), '--tenant', v.tenant, '--product', v.product, '--at', at]);
      expect({ name, code: r.code, stderr: r.stderr }).toEqual({ name, code: 0, stderr: '' });
    });
    const several = v.bad.find((b) => b.issues.length > 1);
    expect(several).toBeDefined();
    await writeFile(p('several.json'), JSON.stringify(several!.payload));
    const r = await runCli(['sign', p('several.json'), '--key', p('authorizer.key')]);
    expectFailure(r, 1, /^refused: PAYLOAD_INVALID: /);
    for (const issue of several!.issues) expect(r.stderr).toContain(issue.path);
    expect(r.stdout).toBe('');
  });
});
