#!/usr/bin/env node
/**
 * `pnpm demo` (after `turbo run build`): the whole signed-release flow with real processes on
 * loopback, narrated one line per step. A server on a temp data dir (embedded database), three
 * real agent processes as devices, a customer key made with `svc-release keygen`, a
 * two-component release signed with `svc-release sign`, published, rolled out in two waves
 * (the second approved once the canary committed), the transaction result, and one receipt
 * verified offline with `svc-release verify-receipt`, then a log bundle requested from one device
 * (collected and uploaded by its agent on the next heartbeat). Then vulnerability intelligence: a
 * small OSV feed the demo makes (a tar of one OSV record) is imported, an SBOM attached to the model
 * artifact, and the finding on that published artifact printed with the devices it exposes; a
 * Cyber Resilience Act Article 14 case is run on that finding (docs/article-14.md): opened with
 * its awareness, assessed reportable, early warning and notification produced and their filings
 * recorded, a fixing release (the model with the fixed component) signed and rolled out and its
 * rollout linked as the corrective measure, the final report and the users' advisory filed, and
 * the case archive exported and verified offline with `svc-release verify-evidence`. The
 * vulnerability and readiness reports are downloaded as PDFs into the temp dir (paths, sizes and
 * SHA-256 printed, each checked against its audit row). Everything is shut down and the temp
 * dir removed. Exit 0 on success; on failure (cleanup included) one `demo: FAILED: ...` line on stderr and exit 1.
 * Bounded: gives up after DEMO_TIMEOUT_S (default 120) seconds.
 *
 * The harness is the one the end-to-end tests use (apps/e2e), so the demo cannot drift from
 * what is tested; apps/e2e/test/demo.test.ts runs this script.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { article14Demo } from './article14-demo.mjs';
import { logIn, writeTar } from '@svc/test-kit';

const root = resolve(import.meta.dirname, '..');
const harness = join(root, 'apps/e2e/dist/index.js');
const DEVICES = ['gw-0001', 'gw-0002', 'gw-0003'];
const TIMEOUT_S = Number(process.env.DEMO_TIMEOUT_S ?? 120);

const say = (line) => process.stdout.write(`demo: ${line}\n`);

const DEMO_VULN = 'x_svc-demo-2026-0001';
/** The health probe of the demo's releases: the config is in place once activated. */
const PROBES = [
  { name: 'config-present', type: 'command', command: ['/bin/sh', '-c', 'test -s "$SVC_AGENT_DATA_DIR/placed/config/gateway-config"'], timeout_s: 10 },
];

async function run(state) {
  const { ADMIN, Fleet, Proc, svcRelease, waitFor } = await import(pathToFileURL(harness).href);
  state.stopAll = () => Proc.stopAll();
  state.dir = await mkdtemp(join(tmpdir(), 'svc-demo-'));
  say(`temp dir ${state.dir}`);
  // each agent bundles its device's gateway.log (SVC_AGENT_LOG_FILES) besides journald
  const gatewayLog = (name) => join(state.dir, 'devices', name, 'gateway.log');
  const fleet = await Fleet.start({ root: state.dir, devices: DEVICES, narrate: say, agentEnv: (name) => ({ SVC_AGENT_LOG_FILES: gatewayLog(name) }) });
  state.fleet = fleet;
  const { api } = fleet;

  const group = await fleet.createGroup('field-gateways', DEVICES);
  say(`group ${group.name} created with ${DEVICES.length} devices (snapshot ${group.snapshot_digest})`);
  const config = await api.uploadArtifact({
    name: 'gateway-config',
    version: '1.4.0',
    kind: 'config',
    filename: 'gateway.toml',
    bytes: Buffer.from('[uplink]\nhost = "telemetry.example"\ninterval_s = 30\n'),
  });
  say(`artifact ${config.name} ${config.version} published (${config.kind}, ${config.digest})`);
  const model = await api.uploadArtifact({
    name: 'anomaly-model',
    version: '2.1.0',
    kind: 'model',
    filename: 'anomaly.onnx',
    bytes: Buffer.from('onnx-weights:'.repeat(4096)),
  });
  say(`artifact ${model.name} ${model.version} published (${model.kind}, ${model.digest})`);

  const { release, sign } = await fleet.signAndSubmit({
    version: '2026.1.0',
    components: [
      { name: 'gateway-config', artifact: config },
      { name: 'anomaly-model', artifact: model },
    ],
    orderedGroups: [['gateway-config'], ['anomaly-model']],
    group,
    probes: PROBES,
    waves: [
      { name: 'canary', count: 1 },
      { name: 'fleet', count: DEVICES.length, requires_approval: true },
    ],
  });
  say(
    `release signed with svc-release sign (${
      sign
        .trim()
        .split('\n')
        .find((l) => l.startsWith('envelope digest')) ?? 'envelope written'
    })`,
  );
  say(`release ${release.product} ${release.version} published as TUF target ${release.target}`);

  const rollout = await fleet.startRollout(release.id);
  const txId = rollout.transaction_id;
  say(`rollout started: transaction ${txId}, members ${rollout.rollouts.map((m) => `${m.component}@${m.group}/${m.position}`).join(', ')}`);
  const gated = await waitFor(
    'the canary wave to finish',
    async () => {
      const r = await api.get(`/rollouts/${rollout.id}`);
      return r.status === 'awaiting_approval' ? r : undefined;
    },
    60_000,
    250,
  );
  say(`canary wave done (${gated.progress.committed} committed); wave "fleet" awaits approval`);
  await api.json('POST', `/rollouts/${rollout.id}/approve`, undefined, 200);
  say('wave "fleet" approved');

  const tx = await fleet.waitSettled(txId, 60_000);
  say(`transaction ${tx.id}: ${tx.state}`);
  const result = await api.get(`/release-transactions/${txId}/result`);
  for (const d of result.devices) {
    say(`  ${d.device}: ${d.state}; ${d.members.map((m) => `${m.component} #${m.position} ${m.verdict}`).join(', ')}`);
  }
  if (tx.state !== 'committed') throw new Error(`transaction ended ${tx.state}, expected committed`);

  const { index, receipts } = await fleet.exportReceipts(txId);
  say(`receipts exported: ${index.length} device-signed receipts (${[...new Set(index.map((l) => l.label))].join(', ')})`);
  const first = index[0];
  const file = join(state.dir, `${first.device}.receipt.json`);
  await writeFile(file, receipts.get(first.file));
  const verified = await svcRelease(['verify-receipt', file, '--ca', fleet.deviceCaFile(first.device), '--tenant', fleet.tenant, '--device', first.device]);
  if (verified.status !== 0) throw new Error(`svc-release verify-receipt exited ${verified.status}: ${verified.stderr.trim()}`);
  say(`svc-release verify-receipt ${first.device}: verified`);
  for (const line of verified.stdout.trim().split('\n')) say(`  ${line}`);

  const device = DEVICES[0];
  await writeFile(
    gatewayLog(device),
    `${new Date().toISOString()} ${device} uplink connected to telemetry.example\n${new Date().toISOString()} ${device} anomaly-model 2.1.0 loaded\n`,
  );
  const logRequest = await fleet.requestLogs(device);
  say(`log bundle requested from ${device} (request ${logRequest.id}: ${logRequest.status})`);
  const bundle = await fleet.downloadLogs(device, logRequest.id);
  const firstLog = bundle.entries.find((e) => e.name !== 'manifest.json' && e.bytes.length > 0);
  if (firstLog === undefined) throw new Error('the log bundle holds no log lines');
  say(`log bundle from ${device}: ${bundle.bytes.length} bytes (${bundle.contentType}, ${bundle.entries.length} entries)`);
  say(`  first line (${firstLog.name}): ${firstLog.bytes.toString('utf8').split('\n')[0]}`);

  await vulnerabilitiesAndReports(state, { fleet, group, config, model, admin: ADMIN, svcRelease });
}

/**
 * A finding on a published artifact from a feed the demo makes, the Article 14 case run on it
 * (the fix a second release rolled out to the fleet), then both reports as PDFs.
 */
async function vulnerabilitiesAndReports(state, { fleet, group, config, model, admin, svcRelease }) {
  const { api } = fleet;
  // the feed and SBOM uploads carry their own content types: a session of their own
  const session = await logIn(`${api.baseUrl}/api/v1`, admin);
  const send = async (method, path, contentType, body, expect) => {
    const res = await fetch(`${api.baseUrl}/api/v1${path}`, { method, headers: { ...session, 'content-type': contentType }, body });
    if (res.status !== expect) throw new Error(`${method} ${path}: ${res.status} ${(await res.text()).slice(0, 300)}`);
    return res.json();
  };
  const record = {
    schema_version: '1.6.0',
    id: DEMO_VULN,
    modified: '2026-01-15T00:00:00Z',
    published: '2026-01-15T00:00:00Z',
    summary: 'Out-of-bounds read in the ONNX model loader (a record made by the demo)',
    affected: [{ package: { ecosystem: 'PyPI', name: 'onnx' }, ranges: [{ type: 'ECOSYSTEM', events: [{ introduced: '0' }, { fixed: '1.16.0' }] }] }],
    database_specific: { severity: 'HIGH' },
  };
  const feed = writeTar([{ name: `PyPI/${DEMO_VULN}.json`, data: JSON.stringify(record) }]);
  const imported = await send('POST', '/vuln-feeds/osv?source=osv%3Ademo', 'application/x-tar', feed, 201);
  say(`OSV feed imported from a tar the demo made: ${imported.added} record added (import ${imported.id})`);
  const sbom = (onnx) =>
    JSON.stringify({
      bomFormat: 'CycloneDX',
      specVersion: '1.5',
      version: 1,
      components: [
        { type: 'library', name: 'onnx', version: onnx, purl: `pkg:pypi/onnx@${onnx}` },
        { type: 'library', name: 'numpy', version: '1.26.4', purl: 'pkg:pypi/numpy@1.26.4' },
      ],
    });
  const attached = await send('PUT', `/artifacts/${model.id}/sbom`, 'application/vnd.cyclonedx+json', sbom('1.15.0'), 200);
  say(`SBOM attached to ${model.name} ${model.version} (CycloneDX, ${attached.components} components): ${attached.findings} finding`);
  const finding = (await api.get(`/artifacts/${model.id}/findings`)).findings[0];
  if (finding === undefined) throw new Error(`no finding on ${model.name} ${model.version}`);
  const exposure = await api.get(`/vulnerabilities/${finding.vulnerability}/exposure`);
  say(
    `finding ${finding.vulnerability} (${finding.severity}) on ${finding.artifact.name} ${finding.artifact.version}: ${finding.component.purl}, fixed in ${finding.fixed_versions.join(', ')}; ${exposure.counts.devices} devices exposed`,
  );

  // the fix: anomaly-model 2.1.1 (onnx 1.16.0) in release 2026.1.1, rolled out in one wave
  const fixRollout = async () => {
    const fixed = await api.uploadArtifact({
      name: 'anomaly-model',
      version: '2.1.1',
      kind: 'model',
      filename: 'anomaly.onnx',
      bytes: Buffer.from('onnx-weights-fixed:'.repeat(4096)),
    });
    const fixedSbom = await send('PUT', `/artifacts/${fixed.id}/sbom`, 'application/vnd.cyclonedx+json', sbom('1.16.0'), 200);
    say(`artifact ${fixed.name} ${fixed.version} published with its SBOM (onnx 1.16.0): ${fixedSbom.findings} findings`);
    const { release } = await fleet.signAndSubmit({
      version: '2026.1.1',
      components: [
        { name: 'gateway-config', artifact: config },
        { name: 'anomaly-model', artifact: fixed },
      ],
      orderedGroups: [['gateway-config'], ['anomaly-model']],
      group,
      probes: PROBES,
      waves: [{ name: 'fleet', count: DEVICES.length }],
    });
    const rollout = await fleet.startRollout(release.id);
    const tx = await fleet.waitSettled(rollout.transaction_id, 60_000);
    if (tx.state !== 'committed') throw new Error(`the fixing transaction ended ${tx.state}, expected committed`);
    say(`fixing release ${release.product} ${release.version} signed, rolled out and committed on ${DEVICES.length} devices (transaction ${tx.id})`);
    return rollout.rollouts.find((m) => m.component === 'anomaly-model').rollout_id;
  };
  await article14Demo({
    api,
    say,
    dir: state.dir,
    svcRelease,
    tenant: fleet.tenant,
    vulnerabilityId: finding.vulnerability,
    artifactIds: [model.id],
    deviceNames: DEVICES,
    fixRollout,
  });

  for (const kind of ['vulnerability', 'readiness']) {
    const res = await api.raw('GET', `/reports/${kind}.pdf`, undefined, 200);
    const bytes = Buffer.from(await res.arrayBuffer());
    const sha256 = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
    const file = join(state.dir, `${kind}-report.pdf`);
    await writeFile(file, bytes);
    const audited = (await api.get('/audit?action=report.generate&limit=1')).events[0];
    if (audited?.detail?.sha256 !== sha256 || audited.detail.bytes !== bytes.length)
      throw new Error(`${kind} report: the audit row does not name the bytes served`);
    say(`${kind} report written to ${file} (${bytes.length} bytes, ${sha256}, audited)`);
  }
}

async function cleanup(state) {
  try {
    if (state.fleet) {
      await state.fleet.stop();
      say('server and agents stopped');
    }
    // a run that gave up before the fleet was complete may still have children
    await state.stopAll?.();
  } finally {
    if (state.dir) await rm(state.dir, { recursive: true, force: true });
  }
}

const state = {};
let timer;
const timeout = new Promise((_, reject) => {
  timer = setTimeout(() => reject(new Error(`timed out after ${TIMEOUT_S} s`)), TIMEOUT_S * 1000);
});
let code = 0;
try {
  await Promise.race([run(state), timeout]);
  say('OK');
} catch (e) {
  process.stderr.write(`demo: FAILED: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}\n`);
  if (e instanceof Error && e.message.includes('\n')) process.stderr.write(`${e.message}\n`);
  code = 1;
} finally {
  clearTimeout(timer);
  // a process or temp dir left behind is a failure too, after a run that succeeded as well
  await cleanup(state).catch((e) => {
    process.stderr.write(`demo: FAILED: cleanup: ${e.message}\n`);
    code = 1;
  });
}
process.exit(code);
