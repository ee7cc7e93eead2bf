import { runCommand } from '../drivers/run.js';
import type { HealthPolicy, Probe } from './policy.js';

export interface ProbeResult {
  name: string;
  ok: boolean;
  /** One line: exit code, status, timeout or error. */
  detail: string;
}

export interface HealthResult {
  verdict: 'healthy' | 'unhealthy';
  results: ProbeResult[];
}

export async function runProbe(probe: Probe): Promise<ProbeResult> {
  const timeoutMs = Math.round(probe.timeout_s * 1000);
  if (probe.type === 'command') {
    try {
      const r = await runCommand(probe.command, { timeoutMs });
      if (r.timedOut) return { name: probe.name, ok: false, detail: `timed out after ${probe.timeout_s}s` };
      return { name: probe.name, ok: r.code === 0, detail: `exit ${r.code ?? r.signal}` };
    } catch (e) {
      return { name: probe.name, ok: false, detail: `cannot run: ${(e as Error).message}` };
    }
  }
  try {
    const res = await fetch(probe.url, { signal: AbortSignal.timeout(timeoutMs), redirect: 'manual' });
    await res.body?.cancel();
    return { name: probe.name, ok: res.status === probe.expect_status, detail: `status ${res.status}` };
  } catch (e) {
    const err = e as Error;
    const detail = err.name === 'TimeoutError' ? `timed out after ${probe.timeout_s}s` : `request failed: ${err.message}`;
    return { name: probe.name, ok: false, detail };
  }
}

/** Runs every probe, one after another (a group's health check). */
export async function runHealth(policy: HealthPolicy): Promise<HealthResult> {
  const results: ProbeResult[] = [];
  for (const probe of policy.probes) {
    results.push(await runProbe(probe));
  }
  return { verdict: results.every((r) => r.ok) ? 'healthy' : 'unhealthy', results };
}

/** The seam the orchestrator uses; tests may inject a scripted checker. */
export interface HealthChecker {
  /** `active`: components live at this point, for checkers that care. */
  check(policy: HealthPolicy, active: ReadonlySet<string>): Promise<HealthResult>;
}

export const probeHealthChecker: HealthChecker = { check: (policy) => runHealth(policy) };
