import {
  envelopeBytes,
  signReceipt,
  validateDeliveryReport,
  type ActivationOutcome,
  type DeliveryReport,
  type MemberVerdict,
  type PrivateKey,
} from '@svc/release-core';
import type { Journal, TxContext } from '../journal/journal.js';
import { deliveryKey, memberKey, memberRecord, type TxData, type TxFacts } from '../journal/tx-data.js';
import type { Outbox } from './outbox.js';
import { legacyStatus } from './legacy.js';
import { buildReceipt, type DeviceIdentity } from './receipt.js';

/** Final verdict of each member from what the journal recorded. */
function verdicts(ctx: TxContext): TxFacts {
  const failed = ctx.data.failure?.component ?? null;
  const out: TxFacts = {};
  for (const m of ctx.data.desired.members) {
    const r = memberRecord(ctx.data, m.component);
    let verdict: MemberVerdict;
    if (ctx.state === 'committed') verdict = 'committed';
    else if (r.verdict === 'rolled-back' || r.verdict === 'failed') verdict = r.verdict;
    else if (r.attempted)
      verdict = 'failed'; // attempted and not restored: the truth is "failed"
    else verdict = failed === m.component || failed === `components.${m.component}.digest` ? 'failed' : 'not-attempted';
    out[memberKey(m.component)] = { ...r, verdict };
  }
  return out;
}

/** The members' journaled deliveries as one report, or undefined when none was downloaded. */
function deliveryReport(data: TxData): DeliveryReport | undefined {
  const members = data.desired.members.flatMap((m) => {
    const d = data[deliveryKey(m.component)];
    return d === undefined ? [] : [d];
  });
  return members.length === 0 ? undefined : validateDeliveryReport({ members });
}

/**
 * Writes the terminal report into the outbox BEFORE anything is reported (spec §2.3 rule 1)
 * and journals it. Signed work gets a device-signed svc.release-receipt.v1; legacy rollouts a
 * plain status document that can never be mistaken for a receipt (spec §2.2 rule 3).
 */
export async function writeTerminalReport(
  ctx: TxContext,
  deps: { journal: Journal; outbox: Outbox; device: DeviceIdentity & { key: PrivateKey }; now: Date },
): Promise<void> {
  const { desired } = ctx.data;
  const members = verdicts(ctx);
  const data = { ...ctx.data, ...members };
  const activation: ActivationOutcome = ctx.state === 'committed' ? 'activated' : ctx.state === 'rolled-back' ? 'rolled-back' : 'failed';
  const health = ctx.data.health_verdict ?? 'not-checked';
  let bytes: Uint8Array;
  if (desired.kind === 'legacy') {
    const m = desired.members[0]!;
    const doc = legacyStatus(m, memberRecord(members, m.component), ctx.state, deps.device.name, ctx.data.failure?.message ?? null, deps.now);
    bytes = new TextEncoder().encode(JSON.stringify(doc));
  } else {
    const payload = buildReceipt({ desired, data, device: deps.device, activation, health, now: deps.now });
    // spec §2.3: signed with the device's P-256 identity key
    bytes = envelopeBytes(signReceipt(payload, deps.device.key));
    // how the bytes arrived, beside the receipt and not in it (docs/delta-updates.md)
    const delivery = deliveryReport(ctx.data);
    if (delivery !== undefined) await deps.outbox.putDelivery(ctx.tx, new TextEncoder().encode(JSON.stringify(delivery)));
  }
  const file = await deps.outbox.put(ctx.tx, desired.kind === 'legacy' ? 'legacy-status' : 'receipt', bytes);
  await deps.journal.transition(ctx.tx, 'receipt-persisted', { ...members, activation, health_verdict: health, outbox_file: file });
}
