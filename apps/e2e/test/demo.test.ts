import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src/index.js';

/**
 * `pnpm demo` must not rot: run `node scripts/demo.mjs` (the global setup has built the
 * server, agent, CLI and this harness) and check its exit status and key narrated lines.
 */
function runDemo(): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(REPO_ROOT, 'scripts', 'demo.mjs')], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (err += d.toString('utf8')));
    child.once('close', (code) => resolve({ code, out, err }));
  });
}

describe('pnpm demo', () => {
  it('runs the signed two-component rollout, the finding and its Article 14 case end to end and exits 0', async () => {
    const { code, out, err } = await runDemo();
    expect(code, `${out}\n${err}`).toBe(0);
    const lines = out.trim().split('\n');
    expect(
      lines.every((l) => l.startsWith('demo: ')),
      out,
    ).toBe(true);
    for (const re of [
      /^demo: server listening on http:\/\/127\.0\.0\.1:\d+ \(REST\)/,
      /^demo: customer release key generated with svc-release keygen and registered as authorizer \(sha256:[0-9a-f]{64}\)$/,
      /^demo: device gw-0003 enrolled/,
      /^demo: release signed with svc-release sign \(envelope digest: sha256:[0-9a-f]{64}\)$/,
      /^demo: wave "fleet" approved$/,
      /^demo: transaction [0-9a-f-]{36}: committed$/,
      /^demo: {3}gw-0002: committed; gateway-config #0 committed, anomaly-model #1 committed$/,
      /^demo: receipts exported: 3 device-signed receipts \(software-key\)$/,
      /^demo: svc-release verify-receipt gw-000\d: verified$/,
      /^demo: {3}activation: activated$/,
      /^demo: {3}member 1 anomaly-model \(group 1\): committed; candidate sha256:[0-9a-f]{64}, previous none \(first install\), resulting sha256:[0-9a-f]{64}$/,
      /^demo: log bundle requested from gw-0001 \(request [0-9a-f-]{36}: pending\)$/,
      /^demo: log bundle from gw-0001: \d+ bytes \(application\/gzip, \d+ entries\)$/,
      /^demo: {3}first line \((journal\.log|files\/1-gateway\.log)\): \S+/,
      /^demo: OSV feed imported from a tar the demo made: 1 record added \(import [0-9a-f-]{36}\)$/,
      /^demo: SBOM attached to anomaly-model 2\.1\.0 \(CycloneDX, 2 components\): 1 finding$/,
      /^demo: finding x_svc-demo-2026-0001 \(high\) on anomaly-model 2\.1\.0: pkg:pypi\/onnx@1\.15\.0, fixed in 1\.16\.0; 3 devices exposed$/,
      /^demo: Article 14 case [0-9a-f-]{36} opened for x_svc-demo-2026-0001 \(exploited_vulnerability\)$/,
      /^demo: {3}awareness recorded: \S+Z by psirt@example\.test; early warning due \S+Z$/,
      /^demo: {3}linked: 1 finding \(anomaly-model 2\.1\.0\); affected 3 devices, groups field-gateways$/,
      /^demo: assessed reportable by admin@e2e\.test$/,
      /^demo: early warning produced \(sha256:[0-9a-f]{64}\) and its filing recorded$/,
      /^demo: notification produced \(sha256:[0-9a-f]{64}\) and its filing recorded$/,
      /^demo: fixing release edge-gw 2026\.1\.1 signed, rolled out and committed on 3 devices \(transaction [0-9a-f-]{36}\)$/,
      /^demo: fixing rollout [0-9a-f-]{36} linked as the corrective measure: final report due \S+Z; 0 devices still exposed$/,
      /^demo: final report produced \(sha256:[0-9a-f]{64}\) and its filing recorded$/,
      /^demo: advisory produced \(sha256:[0-9a-f]{64}\) and its filing recorded$/,
      /^demo: case archive exported to \S+\/case-[0-9a-f-]{36}\.tar \(\d+ bytes\)$/,
      /^demo: svc-release verify-evidence case-[0-9a-f-]{36}\.tar: verified, \d+ files, signed by sha256:[0-9a-f]{64}$/,
      /^demo: vulnerability report written to \S+\/vulnerability-report\.pdf \(\d+ bytes, sha256:[0-9a-f]{64}, audited\)$/,
      /^demo: readiness report written to \S+\/readiness-report\.pdf \(\d+ bytes, sha256:[0-9a-f]{64}, audited\)$/,
      /^demo: OK$/,
      /^demo: server and agents stopped$/,
    ]) {
      expect(
        lines.some((l) => re.test(l)),
        `no line matching ${re} in:\n${out}`,
      ).toBe(true);
    }
    expect(out).not.toContain('undefined');
    // the temp dir it announced is gone
    const dir = /^demo: temp dir (\S+)$/m.exec(out)![1]!;
    const { existsSync } = await import('node:fs');
    expect(existsSync(dir)).toBe(false);
    // both report PDFs were written inside it (and went with it)
    for (const kind of ['vulnerability', 'readiness']) expect(out).toContain(`demo: ${kind} report written to ${join(dir, `${kind}-report.pdf`)} (`);
  }, 180_000);
});
