import type { MemberDriver } from '../drivers/driver.js';
import type { Journal, TxContext } from '../journal/journal.js';
import type { PlannedMember } from './members.js';
import { memberRecord, type MemberRecord } from './receipt.js';

/** What the activation steps need from the orchestrator. */
export interface ActivationEnv {
  journal: Journal;
  driver(m: PlannedMember): MemberDriver;
  step(step: `mid-activation-${number}`, tx: string): Promise<void>;
}

/** Records one member's journal facts (merged over what is there). */
export async function putMember(journal: Journal, tx: string, m: PlannedMember, patch: Partial<MemberRecord>): Promise<void> {
  const rec = memberRecord(journal.get(tx)!.data, m.component);
  await journal.note(tx, { [`member:${m.component}`]: { ...rec, ...patch } });
}

/** Activates the members of `data.group` in position order; stops for an os-bundle reboot. */
export async function activateGroup(env: ActivationEnv, ctx: TxContext, members: PlannedMember[]): Promise<{ status: 'rebooting'; tx: string } | null> {
  const g = ctx.data.group as number;
  let first = true;
  for (const m of members.filter((x) => x.group === g)) {
    const rec = memberRecord(env.journal.get(ctx.tx)!.data, m.component);
    if (rec.activated === true) continue;
    const driver = env.driver(m);
    // Journal the previous digest and "attempted" BEFORE touching the member: a crash in
    // activate() must still lead to its rollback.
    const previous = rec.attempted ? rec.previous_digest : await driver.currentDigest(m);
    await putMember(env.journal, ctx.tx, m, { attempted: true, previous_digest: previous });
    const result = await driver.activate(m, rec.facts);
    await putMember(env.journal, ctx.tx, m, { activated: true, facts: { ...rec.facts, ...(result.facts ?? {}) } });
    if (first) await env.step(`mid-activation-${g}`, ctx.tx);
    first = false;
    if (result.needsReboot) {
      await env.journal.transition(ctx.tx, 'reboot-required');
      await driver.reboot?.();
      return { status: 'rebooting', tx: ctx.tx };
    }
  }
  await env.journal.transition(ctx.tx, 'group-activated');
  return null;
}

/** spec 3.4: restore every attempted member in reverse activation order. */
export async function rollBack(env: ActivationEnv, ctx: TxContext, members: PlannedMember[]): Promise<null> {
  const reverse = [...members].sort((a, b) => b.position - a.position);
  for (const m of reverse) {
    const rec = memberRecord(env.journal.get(ctx.tx)!.data, m.component);
    if (!rec.attempted || rec.verdict === 'rolled-back' || rec.verdict === 'failed') continue;
    const facts = (await env.driver(m).rollback(m, rec.facts)) ?? {};
    const resulting = m.kind === 'os-bundle' ? rec.previous_digest : await env.driver(m).currentDigest(m);
    // Restored means the previous digest is live again; anything else is reported as failed.
    const verdict = resulting === rec.previous_digest ? 'rolled-back' : 'failed';
    await putMember(env.journal, ctx.tx, m, { verdict, resulting_digest: resulting, facts: { ...rec.facts, ...facts } });
  }
  const data = env.journal.get(ctx.tx)!.data;
  if (data.retry === true) {
    // Back to staged with a clean slate: the retry activates from the first group again.
    const reset: Record<string, unknown> = { retry: false, group: 0, retries: Number(data.retries ?? 0) + 1, failure: null };
    for (const m of members) {
      const rec = memberRecord(data, m.component);
      reset[`member:${m.component}`] = { ...rec, attempted: false, activated: false, verdict: 'not-attempted', resulting_digest: null } satisfies MemberRecord;
    }
    await env.journal.transition(ctx.tx, 'retry', reset);
  } else {
    await env.journal.transition(ctx.tx, 'rolled-back', { activation: 'rolled-back' });
  }
  return null;
}
