/**
 * The Article 14 part of `pnpm demo`, as one function the demo calls once a finding exists:
 * open a case on the finding's vulnerability and artifact (awareness recorded with it), show
 * what the case links to (findings, affected devices and groups), assess it reportable,
 * produce and file the early warning and the notification, let the caller roll out the fix and
 * link that rollout as the corrective measure, file the final report and the users' advisory
 * (CSAF 2.0), export the case archive and verify it offline with `svc-release verify-evidence`.
 * One narrated line per step. REST only (docs/article-14.md).
 *
 *   import { article14Demo } from './article14-demo.mjs';
 *   await article14Demo({ api, say, dir, svcRelease, tenant, vulnerabilityId: 'CVE-2024-3094',
 *     artifactIds: [artifact.id], deviceNames: DEVICES, fixRollout: async () => rolloutId });
 *
 * `api` is apps/e2e's `Api` (`json(method, path, body, expect)`, `raw(method, path, body,
 * expect)`); `svcRelease(args)` is apps/e2e's, resolving to `{ status, stdout, stderr }`;
 * `fixRollout()` resolves to the id of the member rollout that carries the fix.
 */
import { writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';

const SUBMISSIONS = {
  early_warning: { member_states: ['DE', 'FR'], sensitivity: 'TLP:AMBER' },
  notification: {
    product_information: 'Edge gateway firmware running the vulnerable component.',
    vulnerability_nature: 'Known vulnerability in a bundled component, listed in the KEV catalog.',
    exploit_nature: 'Exploited remotely in the wild.',
    corrective_measures_taken: 'A fixed release is being rolled out to the fleet.',
    user_measures: 'Restrict network access to the device until the update is installed.',
    sensitivity: 'TLP:AMBER',
  },
  final_report: {
    description: 'Vulnerability in a bundled component of the gateway firmware.',
    severity: 'high',
    impact: 'Remote code execution on unpatched gateways.',
    security_update: 'The fixed release has been rolled out; devices report device-signed receipts.',
  },
  advisory: {
    title: 'Gateway firmware: actively exploited vulnerability fixed',
    summary: 'A vulnerability in a bundled component is actively exploited. A fixed release is available.',
    severity: 'high',
    user_measures: 'Install the fixed release; until then restrict network access to the device.',
    publisher_namespace: 'https://psirt.example.test',
  },
};

export async function article14Demo({
  api,
  say,
  dir,
  svcRelease,
  tenant,
  vulnerabilityId,
  artifactIds = [],
  deviceNames = [],
  fixRollout,
  memberState = 'DE',
}) {
  const awareBy = 'psirt@example.test';
  const c = await api.json(
    'POST',
    '/cases',
    {
      kind: 'exploited_vulnerability',
      title: `${vulnerabilityId} actively exploited`,
      owner: 'psirt@example.test',
      vulnerability_ids: [vulnerabilityId],
      artifact_ids: artifactIds,
      device_names: deviceNames,
      awareness: {
        aware_at: new Date(Date.now() - 3600_000).toISOString(),
        aware_by: awareBy,
        evidence: `${vulnerabilityId} reported exploited in the wild; the finding shows it on a published artifact`,
      },
    },
    201,
  );
  say(`Article 14 case ${c.id} opened for ${vulnerabilityId} (${c.kind})`);
  say(`  awareness recorded: ${c.awareness.aware_at} by ${c.awareness.aware_by}; early warning due ${c.next_deadline.due_at}`);
  const linked = await api.json('GET', `/cases/${c.id}/findings`, undefined, 200);
  const onArtifacts = [...new Set(linked.findings.map((f) => `${f.artifact.name} ${f.artifact.version}`))].join(', ');
  say(
    `  linked: ${linked.findings_total} finding (${onArtifacts}); affected ${linked.affected.devices_total} devices, groups ${linked.affected.groups.map((g) => g.name).join(', ')}`,
  );
  const assessed = await api.json(
    'POST',
    `/cases/${c.id}/assessments`,
    { outcome: 'reportable', rationale: 'Actively exploited and present on devices in the field.' },
    200,
  );
  say(`assessed ${assessed.assessment.outcome} by ${assessed.assessment.assessor}`);
  const file = async (stage, filing) => {
    const s = await api.json('POST', `/cases/${c.id}/submissions`, { stage, content: SUBMISSIONS[stage] }, 201);
    await api.json('POST', `/cases/${c.id}/submissions/${s.id}/filings`, filing, 201);
    say(`${stage.replace('_', ' ')} produced (${s.digest}) and its filing recorded`);
    return s;
  };
  await file('early_warning', { recipients: ['csirt', 'enisa'], member_state: memberState, external_reference: 'SRP-DEMO-1' });
  await file('notification', { recipients: ['csirt', 'enisa'], member_state: memberState, external_reference: 'SRP-DEMO-1' });
  const fixRolloutId = await fixRollout();
  const measured = await api.json(
    'POST',
    `/cases/${c.id}/corrective-measure`,
    { rollout_id: fixRolloutId, description: 'Fixed release rolled out to the fleet.' },
    200,
  );
  const after = await api.json('GET', `/cases/${c.id}/findings`, undefined, 200);
  say(
    `fixing rollout ${fixRolloutId} linked as the corrective measure: final report due ${measured.deadlines.find((d) => d.obligation === 'final_report').due_at}; ${after.affected.devices_total} devices still exposed`,
  );
  await file('final_report', { recipients: ['csirt', 'enisa'], member_state: memberState, external_reference: 'SRP-DEMO-1' });
  await file('advisory', { recipients: ['users'], external_reference: 'https://psirt.example.test/advisories/demo' });
  const key = await api.json('GET', '/evidence-key', undefined, 200);
  const keyPath = join(dir, 'evidence.pub');
  await writeFile(keyPath, key.public_key_pem);
  const archive = Buffer.from(await (await api.raw('GET', `/cases/${c.id}/export`, undefined, 200)).arrayBuffer());
  const archivePath = join(dir, `case-${c.id}.tar`);
  await writeFile(archivePath, archive);
  const verified = await svcRelease(['verify-evidence', archivePath, '--key', keyPath, ...(tenant ? ['--tenant', tenant] : []), '--json']);
  if (verified.status !== 0) throw new Error(`svc-release verify-evidence refused the case archive: ${verified.stderr.trim()}`);
  const summary = JSON.parse(verified.stdout);
  say(`case archive exported to ${archivePath} (${archive.length} bytes)`);
  say(`svc-release verify-evidence ${basename(archivePath)}: verified, ${summary.files} files, signed by ${summary.keyid}`);
  return { caseId: c.id, archivePath, keyPath, summary };
}
