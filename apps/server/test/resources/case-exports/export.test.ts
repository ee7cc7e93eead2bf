/**
 * The case export: a streamed tar whose manifest the service signs with the tenant's evidence
 * key. Verified offline twice: by a reader that uses only node:crypto and a tar parser (the
 * auditor's own code), and by the built `svc-release verify-evidence`.
 */
import { spawnSync } from 'node:child_process';
import { createPublicKey, createHash, verify } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { envelopeBytes, signReceipt, type PrivateKey, type ReceiptPayload } from '@svc/release-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acceptReceipt } from '../../../src/resources/release-receipts/commands.js';
import { deviceActor, runUnitOfWork } from '../../../src/resources/unit-of-work.js';
import { createCasesFixture, VALID_CONTENT, type CasesFixture } from '../../fixtures/cases.js';
import { availableDrivers } from '../../helpers/store.js';
import { deviceIdentity, newAuthorizer, releasePayload, sign, untar } from '../../fixtures/release-flow.js';
import { writeTar } from '@svc/test-kit';
import { attachmentMultipart } from '../../fixtures/cases-multipart.js';

const CLI = resolve(import.meta.dirname, '../../../../cli/bin/run.js');
const CLI_BUILT = existsSync(resolve(import.meta.dirname, '../../../../cli/dist/commands/verify-evidence.js'));
if (!CLI_BUILT && process.env.CI === 'true') throw new Error('apps/cli is not built (dist/commands/verify-evidence.js missing): run pnpm build first');

function cli(...args: string[]) {
  return spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8' });
}

/** DSSE PAE, written out: an auditor's verifier needs nothing from this project. */
function pae(type: string, payload: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`DSSEv1 ${Buffer.byteLength(type)} ${type} ${payload.length} `), payload]);
}

/** Verifies an archive with node:crypto and the entries of a tar; answers the manifest, or throws saying why not. */
function verifyWithNodeCrypto(files: Map<string, Buffer>, publicKeyPem: string): any {
  const env = JSON.parse(files.get('manifest.dsse.json')!.toString('utf8')) as {
    payloadType: string;
    payload: string;
    signatures: { keyid: string; sig: string }[];
  };
  const payload = Buffer.from(env.payload, 'base64');
  const key = createPublicKey(publicKeyPem);
  const keyid = `sha256:${createHash('sha256')
    .update(key.export({ format: 'der', type: 'spki' }))
    .digest('hex')}`;
  const sig = env.signatures.find((s) => s.keyid === keyid);
  if (!sig || !verify(null, pae(env.payloadType, payload), key, Buffer.from(sig.sig, 'base64'))) throw new Error('manifest signature does not verify');
  if (!payload.equals(files.get('manifest.json')!)) throw new Error('manifest.json is not the signed payload');
  const manifest = JSON.parse(payload.toString('utf8'));
  const listed = new Set<string>();
  for (const f of manifest.files as { path: string; length: number; digest: string }[]) {
    const bytes = files.get(f.path);
    if (!bytes) throw new Error(`${f.path} missing`);
    if (`sha256:${createHash('sha256').update(bytes).digest('hex')}` !== f.digest || bytes.length !== f.length) throw new Error(`${f.path} does not match`);
    listed.add(f.path);
  }
  for (const name of files.keys()) if (!listed.has(name) && name !== 'manifest.json' && name !== 'manifest.dsse.json') throw new Error(`${name} not listed`);
  return manifest;
}

describe.each(availableDrivers())('case export on %s', (driver) => {
  let f: CasesFixture;
  let dir: string;
  let caseId: string;
  let archive: Buffer;
  let files: Map<string, Buffer>;
  let publicKeyPem: string;
  const DEVICES = ['ex-1', 'ex-2'];

  beforeAll(async () => {
    f = await createCasesFixture(driver);
    dir = await mkdtemp(join(tmpdir(), 'svc-case-export-'));
    const tenant = f.t.tenantId;
    const ids: Record<string, { certDer: Uint8Array; key: PrivateKey }> = {};
    for (const d of DEVICES) {
      await f.device(d);
      ids[d] = await deviceIdentity(f as never, d);
    }
    const arts = [await f.artifact('ex-app', '2.4.1')];
    const group = (await f.api('POST', '/api/v1/groups', { name: 'ex', members: DEVICES })).body;
    const auth = newAuthorizer();
    await f.api('POST', '/api/v1/authorizer-keys', { name: 'k', public_key_pem: auth.pem });
    const rel = (
      await f.api('POST', '/api/v1/releases', {
        envelope: sign(releasePayload({ tenant, artifacts: arts, group }), auth.key),
        expected_product: 'edge-gateway',
      })
    ).body;
    const start = (await f.api('POST', '/api/v1/rollouts', { release_id: rel.id })).body;
    expect(start.kind).toBe('signed');

    const vulnerable = await f.artifact('ex-app', '2.4.0');
    const c = await f.openCase({ artifact_ids: [vulnerable.id], device_names: ['ex-1'], group_ids: [group.id] });
    caseId = c.id;
    // device-signed receipts of the fixing rollout, accepted after awareness
    for (const d of DEVICES) {
      const m = start.rollouts[0];
      const payload = {
        tenant,
        device: { name: d, certificate: Buffer.from(ids[d]!.certDer).toString('base64') },
        release: { product: rel.product, version: rel.version, payload_digest: rel.payload_digest, envelope_digest: rel.envelope_digest },
        activation: 'activated',
        health: 'healthy',
        timestamp: '2026-06-01T00:00:00Z',
        rollout: m.rollout_id,
        candidate_digest: arts[0].digest,
        previous_digest: null,
        resulting_digest: arts[0].digest,
      } as unknown as ReceiptPayload;
      await runUnitOfWork(f.t.testStore.store.db, { tenant, actor: deviceActor(d), now: f.t.clock.now() }, (uow) =>
        acceptReceipt(uow, { deviceName: d, connectionCertificateDer: ids[d]!.certDer, envelopeBytes: envelopeBytes(signReceipt(payload, ids[d]!.key)) }),
      );
    }
    for (const stage of ['early_warning', 'notification'] as const) {
      const s = await f.api('POST', `/api/v1/cases/${caseId}/submissions`, { stage, content: VALID_CONTENT[stage].exploited_vulnerability });
      expect(s.status, JSON.stringify(s.body)).toBe(201);
      expect(
        (
          await f.api('POST', `/api/v1/cases/${caseId}/submissions/${s.body.id}/filings`, {
            recipients: ['csirt', 'enisa'],
            member_state: 'DE',
            external_reference: `SRP-${stage}`,
          })
        ).status,
      ).toBe(201);
    }
    expect((await f.api('POST', `/api/v1/cases/${caseId}/assessments`, { outcome: 'reportable', rationale: 'Exploited in the wild.' })).status).toBe(200);
    expect(
      (
        await f.api('POST', `/api/v1/cases/${caseId}/corrective-measure`, {
          rollout_id: start.rollouts[0].rollout_id,
          description: 'Release 2.4.1 fixes the parser.',
        })
      ).status,
    ).toBe(200);
    const fin = await f.api('POST', `/api/v1/cases/${caseId}/submissions`, {
      stage: 'final_report',
      content: VALID_CONTENT.final_report.exploited_vulnerability,
    });
    expect(
      (await f.api('POST', `/api/v1/cases/${caseId}/submissions/${fin.body.id}/filings`, { recipients: ['csirt', 'enisa'], member_state: 'DE' })).status,
    ).toBe(201);
    for (const [name, body] of [
      ['triage notes.txt', 'first seen on ex-1\n'],
      ['leaked.txt', 'personal data'],
    ] as const) {
      f.t.clock.advance(1000);
      const { payload, contentType } = attachmentMultipart([{ name: 'file', filename: name, type: 'text/plain', body }]);
      const a = await f.t.app.inject({
        method: 'POST',
        url: `/api/v1/cases/${caseId}/attachments`,
        headers: { ...f.admin, 'content-type': contentType },
        payload,
      });
      expect(a.statusCode, a.body).toBe(201);
      if (name === 'leaked.txt')
        expect((await f.api('POST', `/api/v1/cases/${caseId}/attachments/${JSON.parse(a.body).id}/redaction`, { reason: 'Personal data.' })).status).toBe(200);
    }
    const key = await f.api('GET', '/api/v1/evidence-key');
    expect(key.status).toBe(200);
    publicKeyPem = key.body.public_key_pem;
    const res = await f.t.app.inject({ method: 'GET', url: `/api/v1/cases/${caseId}/export`, headers: await f.t.apiKeyHeaders('viewer') });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toBe('application/x-tar');
    archive = res.rawPayload;
    files = await untar(archive);
    await writeFile(join(dir, 'case.tar'), archive);
    await writeFile(join(dir, 'evidence.pub'), publicKeyPem);
  });
  afterAll(async () => {
    await f?.dispose();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('verifies with node:crypto and a tar reader alone, and lists every file', () => {
    const manifest = verifyWithNodeCrypto(files, publicKeyPem);
    expect(manifest).toMatchObject({
      type: 'svc.case-evidence.v1',
      tenant: f.t.tenantId,
      case: { id: caseId, state: 'reportable' },
      receipts: { count: 2, capped: false },
    });
    const paths = manifest.files.map((x: any) => x.path);
    expect(paths.slice(0, 3)).toEqual(['case.json', 'assessments.json', 'submissions/index.json']);
    expect(paths.filter((p: string) => p.startsWith('submissions/') && p.endsWith('.json') && p !== 'submissions/index.json')).toHaveLength(3);
    expect(paths.filter((p: string) => p.endsWith('.pdf'))).toHaveLength(3);
    expect(paths.filter((p: string) => p.startsWith('receipts/') && p.endsWith('.dsse.json'))).toHaveLength(2);
    // the tenant's device CA certificates travel with the receipts (offline verification)
    expect(paths).toContain('receipts/device-cas.pem');
    expect(paths).toContain('findings/findings-and-exposure.json');
    expect(paths).toContain('evidence-key.pub.pem');
  });

  it('holds the case, the exact submission documents, the attachments (redacted ones by record only), the receipts and the audit slice', async () => {
    const exported = JSON.parse(files.get('case.json')!.toString());
    expect(exported.case.deadlines.map((d: any) => [d.obligation, d.status])).toEqual([
      ['early_warning', 'met'],
      ['notification', 'met'],
      ['final_report', 'met'],
    ]);
    const index = JSON.parse(files.get('submissions/index.json')!.toString());
    for (const s of index) {
      const doc = await f.api('GET', `/api/v1/cases/${caseId}/submissions/${s.id}/document`);
      expect(files.get(s.document)!.equals(doc.raw)).toBe(true);
      expect(`sha256:${createHash('sha256').update(files.get(s.document)!).digest('hex')}`).toBe(s.digest);
      expect(files.get(s.pdf)!.subarray(0, 5).toString()).toBe('%PDF-');
    }
    const attachments = JSON.parse(files.get('attachments/index.json')!.toString());
    expect(attachments.map((a: any) => [a.filename, a.file === null, a.redaction?.reason ?? null])).toEqual([
      ['triage notes.txt', false, null],
      ['leaked.txt', true, 'Personal data.'],
    ]);
    expect(files.get(attachments[0].file)!.toString()).toBe('first seen on ex-1\n');
    expect([...files.keys()].some((k) => k.includes('leaked'))).toBe(false);
    const receipts = files
      .get('receipts/index-000001.jsonl')!
      .toString()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(receipts.map((r: any) => r.device).sort()).toEqual(DEVICES);
    const audit = files
      .get('audit/events-000001.jsonl')!
      .toString()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(audit[0].action).toBe('case.open');
    expect(audit.at(-1).action).toBe('case.export');
    expect(new Set(audit.map((e: any) => e.target))).toEqual(new Set([`case:${caseId}`]));
    expect(JSON.parse(files.get('findings/findings-and-exposure.json')!.toString())).toMatchObject({
      vulnerability_ids: ['CVE-2026-12345'],
      vulnerabilities: [{ id: 'CVE-2026-12345', vulnerability: null, known_exploited: false }],
      findings: [],
      exposure: [],
    });
  });

  it('keeps the evidence key like the signing keys: one per tenant, wrapped by the KEK in the database, none under the data dir, stable', async () => {
    expect(existsSync(join(f.dataDir, 'keys', f.t.tenantId, 'evidence.pem'))).toBe(false);
    const wrapped = await f.t.testStore.store.db
      .selectFrom('wrapped_keys')
      .select(['key_id', 'kek_id'])
      .where('key_id', '=', `${f.t.tenantId}/evidence/evidence`)
      .execute();
    expect(wrapped).toHaveLength(1);
    expect(wrapped[0]!.kek_id).toMatch(/^file:[0-9a-f]{32}$/);
    expect((await f.api('GET', '/api/v1/evidence-key')).body.public_key_pem).toBe(publicKeyPem);
    const other = await f.t.newTenant();
    const otherKey = await f.api('GET', '/api/v1/evidence-key', undefined, await f.t.loginAs('viewer', other));
    expect(otherKey.status).toBe(200);
    expect(otherKey.body.public_key_pem).not.toBe(publicKeyPem);
    expect(() => verifyWithNodeCrypto(files, otherKey.body.public_key_pem)).toThrow(/signature/);
  });

  it('refuses a tampered archive: a changed byte, a removed file, an added file', async () => {
    const changed = new Map(files);
    const name = [...files.keys()].find((k) => k.startsWith('attachments/') && k.endsWith('.txt'))!;
    changed.set(name, Buffer.from('first seen on ex-2\n'));
    expect(() => verifyWithNodeCrypto(changed, publicKeyPem)).toThrow(/does not match/);
    const removed = new Map(files);
    removed.delete('assessments.json');
    expect(() => verifyWithNodeCrypto(removed, publicKeyPem)).toThrow(/missing/);
    const added = new Map(files);
    added.set('extra.txt', Buffer.from('x'));
    expect(() => verifyWithNodeCrypto(added, publicKeyPem)).toThrow(/not listed/);
    await writeFile(join(dir, 'changed.tar'), writeTar(changed));
    const unlisted = new Map(files);
    unlisted.delete('manifest.json');
    await writeFile(join(dir, 'no-manifest.tar'), writeTar(unlisted));
  });

  it.skipIf(!CLI_BUILT)(
    'svc-release verify-evidence: exit 0 on the export, 1 on a tampered one, one without manifest.json or another key, 2 on a missing file',
    async () => {
      const ok = cli('verify-evidence', join(dir, 'case.tar'), '--key', join(dir, 'evidence.pub'), '--tenant', f.t.tenantId, '--json');
      expect(ok.stderr).toBe('');
      expect(ok.status).toBe(0);
      expect(JSON.parse(ok.stdout)).toMatchObject({
        case: caseId,
        tenant: f.t.tenantId,
        files: JSON.parse(files.get('manifest.json')!.toString()).files.length,
      });
      const bad = cli('verify-evidence', join(dir, 'changed.tar'), '--key', join(dir, 'evidence.pub'));
      expect(bad.status).toBe(1);
      expect(bad.stderr).toMatch(/^refused: EVIDENCE_INVALID: attachments\/.*does not match the manifest/);
      const noManifest = cli('verify-evidence', join(dir, 'no-manifest.tar'), '--key', join(dir, 'evidence.pub'));
      expect(noManifest.status).toBe(1);
      expect(noManifest.stderr).toBe('refused: EVIDENCE_INVALID: manifest.json: missing from the archive\n');
      const other = await f.t.newTenant();
      await writeFile(join(dir, 'other.pub'), (await f.api('GET', '/api/v1/evidence-key', undefined, await f.t.loginAs('viewer', other))).body.public_key_pem);
      const wrongKey = cli('verify-evidence', join(dir, 'case.tar'), '--key', join(dir, 'other.pub'));
      expect(wrongKey.status).toBe(1);
      expect(wrongKey.stderr).toMatch(/^refused: KEY_UNTRUSTED/);
      const wrongTenant = cli('verify-evidence', join(dir, 'case.tar'), '--key', join(dir, 'evidence.pub'), '--tenant', other);
      expect(wrongTenant.status).toBe(1);
      expect(cli('verify-evidence', join(dir, 'nope.tar'), '--key', join(dir, 'evidence.pub')).status).toBe(2);
      expect((await readFile(join(dir, 'case.tar'))).equals(archive)).toBe(true);
    },
    120_000,
  ); // six CLI processes: slow on a loaded machine

  it('is tenant-scoped: another tenant gets 404, a viewer may export, nothing is half-exported for an unknown case', async () => {
    const other = await f.t.newTenant();
    const foreign = await f.api('GET', `/api/v1/cases/${caseId}/export`, undefined, await f.t.loginAs('admin', other));
    expect(foreign.status).toBe(404);
    expect((await f.api('GET', '/api/v1/cases/not-a-uuid/export')).status).toBe(404);
    expect((await f.api('GET', '/api/v1/cases/00000000-0000-4000-8000-000000000000/export')).status).toBe(404);
  });
});
