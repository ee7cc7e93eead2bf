import { AgentError } from '../errors.js';
import { parseHealthPolicy, probesForGroup } from '../health/policy.js';
import { memberKey, memberRecord, type TxFacts } from '../journal/tx-data.js';
import { crashPoint } from '../state-machine/crash-points.js';
import { currentRecord, groupCount, groupOf, putMember, type Step } from './step-env.js';

/*
 * The steps of the activation phase (spec §3 rule 4): one ordered group at a time, each
 * health-checked, then commit; any failure on the way rolls every attempted member back in
 * reverse order.
 */

/** activating: activates the members of `data.group` in position order; stops for an os-bundle reboot. */
export const activateGroup: Step = async (ctx, env) => {
  const g = groupOf(ctx);
  let first = true;
  for (const m of ctx.data.desired.members.filter((x) => x.group === g)) {
    const rec = currentRecord(env, ctx.tx, m);
    if (rec.activated) continue;
    const driver = env.driver(m);
    // Journal the previous digest and "attempted" BEFORE touching the member: a crash in
    // activate() must still lead to its rollback.
    const previous = rec.attempted ? rec.previous_digest : await driver.currentDigest(m);
    await putMember(env, ctx.tx, m, { attempted: true, previous_digest: previous });
    const result = await driver.activate(m, rec.facts);
    await putMember(env, ctx.tx, m, { activated: true, facts: { ...rec.facts, ...(result.facts ?? {}) } });
    if (first) crashPoint(`mid-activation-${g}`, ctx.tx);
    first = false;
    if (result.needsReboot) {
      await env.journal.transition(ctx.tx, 'reboot-required');
      await driver.reboot?.();
      crashPoint('reboot-requested', ctx.tx);
      return { status: 'rebooting', tx: ctx.tx };
    }
  }
  await env.journal.transition(ctx.tx, 'group-activated');
  return null;
};

/** group-activated: the group's health probes (and those of earlier groups) decide. */
export const checkGroupHealth: Step = async (ctx, env) => {
  const g = groupOf(ctx);
  crashPoint(`before-health-${g}`, ctx.tx);
  const members = ctx.data.desired.members;
  const policy = probesForGroup(parseHealthPolicy(ctx.data.desired.health ?? { probes: [] }, { groups: groupCount(ctx) }), g);
  const active = new Set(members.filter((m) => m.group <= g).map((m) => m.component));
  const result = await env.health.check(policy, active);
  if (result.verdict !== 'healthy') {
    const bad = result.results.filter((r) => !r.ok);
    throw new AgentError('HEALTH_FAILED', `group ${g} unhealthy: ${bad.map((r) => `${r.name} (${r.detail})`).join(', ')}`, {
      field: `health.probes.${bad[0]?.name}`,
    });
  }
  const verdict = result.results.length > 0 ? 'healthy' : (ctx.data.health_verdict ?? 'not-checked');
  const facts: TxFacts = { health_verdict: verdict };
  facts[`health:${g}`] = result.results;
  await env.journal.transition(ctx.tx, 'group-healthy', facts);
  crashPoint(`after-health-${g}`, ctx.tx);
  return null;
};

/** group-healthy: the next group, or commit once the last one is healthy. */
export const nextGroup: Step = async (ctx, env) => {
  const g = groupOf(ctx);
  if (g + 1 < groupCount(ctx)) await env.journal.transition(ctx.tx, 'next-group', { group: g + 1 });
  else await env.journal.transition(ctx.tx, 'all-healthy');
  return null;
};

/** awaiting-reboot: the os-bundle member of `data.group` reports which slot booted. */
export const confirmReboot: Step = async (ctx, env) => {
  const g = groupOf(ctx);
  const m = ctx.data.desired.members.find((x) => x.group === g);
  if (m === undefined) throw new AgentError('JOURNAL_CORRUPT', `group ${g} has no member`, { field: 'data.group' });
  const rec = memberRecord(ctx.data, m.component);
  const driver = env.driver(m);
  if (driver.confirmReboot === undefined) throw new AgentError('ACTIVATION_FAILED', `${m.kind} cannot confirm a reboot`);
  const r = await driver.confirmReboot(m, rec.facts);
  await putMember(env, ctx.tx, m, { facts: { ...rec.facts, ...r.facts } });
  if (!r.ok) throw new AgentError('SLOT_MISMATCH', `booted slot ${r.facts.booted_slot}, installed ${rec.facts.installed_slot}`, { field: 'booted_slot' });
  await env.journal.transition(ctx.tx, 'rebooted');
  return null;
};

/** committing: every member drops its kept previous version (idempotent). */
export const commitAll: Step = async (ctx, env) => {
  let first = true;
  for (const m of ctx.data.desired.members) {
    const rec = currentRecord(env, ctx.tx, m);
    const facts = (await env.driver(m).commit(m, rec.facts)) ?? {};
    await putMember(env, ctx.tx, m, { verdict: 'committed', resulting_digest: m.digest, facts: { ...rec.facts, ...facts } });
    if (first) crashPoint('mid-commit', ctx.tx);
    first = false;
  }
  await env.journal.transition(ctx.tx, 'committed', { activation: 'activated' });
  return null;
};

/** rolling-back: spec §3 rule 4, every attempted member restored in reverse activation order. */
export const rollBack: Step = async (ctx, env) => {
  const members = ctx.data.desired.members;
  let first = true;
  for (const m of [...members].sort((a, b) => b.position - a.position)) {
    const rec = currentRecord(env, ctx.tx, m);
    if (!rec.attempted || rec.verdict === 'rolled-back' || rec.verdict === 'failed') continue;
    const driver = env.driver(m);
    const facts = (await driver.rollback(m, rec.facts)) ?? {};
    const resulting = m.kind === 'os-bundle' ? rec.previous_digest : await driver.currentDigest(m);
    // Restored means the previous digest is live again; anything else is reported as failed.
    const verdict = resulting === rec.previous_digest ? 'rolled-back' : 'failed';
    await putMember(env, ctx.tx, m, { verdict, resulting_digest: resulting, facts: { ...rec.facts, ...facts } });
    if (first) crashPoint('mid-rollback', ctx.tx);
    first = false;
  }
  const data = env.journal.get(ctx.tx)!.data;
  if (data.retry === true) {
    // Back to staged with a clean slate: the retry activates from the first group again.
    const reset: TxFacts = { retry: false, group: 0, retries: (data.retries ?? 0) + 1, failure: null };
    for (const m of members) {
      reset[memberKey(m.component)] = {
        ...memberRecord(data, m.component),
        attempted: false,
        activated: false,
        verdict: 'not-attempted',
        resulting_digest: null,
      };
    }
    await env.journal.transition(ctx.tx, 'retry', reset);
  } else {
    await env.journal.transition(ctx.tx, 'rolled-back', { activation: 'rolled-back' });
  }
  return null;
};
