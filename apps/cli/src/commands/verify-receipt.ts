import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../base-command.js';
import { MAX_BYTES, readInput, readText } from '../io.js';
import { parseTimestamp } from '../time.js';

export default class VerifyReceipt extends BaseCommand {
  static override summary = 'Verify a device-signed release receipt offline.';
  static override description =
    'Checks that the certificate embedded in the receipt chains to the tenant device CA (or, given a ' +
    'bundle of several CA certificates such as device-cas.pem of an export, to the one that issued it: ' +
    'a device CA rotation keeps the old CA for the certificates it issued), names the ' +
    'device (CN and SAN spiffe://<tenant>/device/<name>) and the tenant, and signed the receipt ' +
    '(ECDSA P-256 over the DSSE PAE), and that the receipt passes the svc.release-receipt.v1 rules. ' +
    'Prints a summary: device, release, activation, health and digests. Exit 0 verified, 1 refused ' +
    '(one line on stderr), 2 usage error.';
  static override examples = [
    {
      description: 'Verify a receipt exported from the service',
      command: '<%= config.bin %> <%= command.id %> receipt.json --ca device-ca.pem --tenant 3f1c2a9e-8a4b-4c1e-9d2f-6b7a8c9d0e1f --device gw-0042',
    },
    {
      description: 'A receipt of a receipts export, against the CA certificates it carries',
      command:
        '<%= config.bin %> <%= command.id %> receipts/<digest>.dsse.json --ca device-cas.pem --tenant 3f1c2a9e-8a4b-4c1e-9d2f-6b7a8c9d0e1f --device gw-0042',
    },
    {
      description: 'As JSON, at the time the receipt was uploaded',
      command:
        '<%= config.bin %> <%= command.id %> receipt.json --ca device-ca.pem --tenant 3f1c2a9e-8a4b-4c1e-9d2f-6b7a8c9d0e1f --device gw-0042 --at 2026-06-01T00:00:00Z --json',
    },
  ];
  static override args = {
    receipt: Args.string({ description: 'receipt DSSE envelope JSON (svc.release-receipt.v1)', required: true }),
  };
  static override flags = {
    ca: Flags.string({
      description: 'tenant device CA certificate, PEM; or several concatenated (current and retired CAs, e.g. device-cas.pem of an export)',
      required: true,
      helpValue: 'CA.pem',
    }),
    tenant: Flags.string({ description: 'tenant UUID the device certificate must name', required: true, helpValue: 'UUID' }),
    device: Flags.string({ description: 'device name the certificate must name', required: true, helpValue: 'NAME' }),
    at: Flags.string({ description: 'check certificate validity at this RFC 3339 time instead of now', helpValue: 'TIMESTAMP' }),
    json: Flags.boolean({ description: 'print one JSON object instead of lines', default: false }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(VerifyReceipt);
    const now = flags.at === undefined ? new Date() : parseTimestamp(flags.at);
    const caPem = await readText(flags.ca, 'CA certificate', MAX_BYTES.pem);
    const bytes = await readInput(args.receipt, 'receipt', MAX_BYTES.document);
    const rc = await import('@svc/release-core');
    const ca = rc.parseCertificatesPem(caPem);
    // a receipt is small; the same cap the service applies to uploads.
    const envelope = rc.parseEnvelope(bytes, { payloadTypes: [rc.RECEIPT_PAYLOAD_TYPE], maxBytes: rc.LIMITS.receiptEnvelopeBytes });
    // spec §2.3 rule 2 / contracts §4: chain to the tenant CA, identity = device + tenant, P-256
    // signature by that certificate: all in release-core.
    const {
      payload: r,
      payloadDigest,
      envelopeDigest,
    } = rc.verifyReceipt(envelope, {
      ca,
      tenant: flags.tenant,
      device: flags.device,
      now,
    });
    const summary = {
      device: r.device.name,
      tenant: r.tenant,
      product: r.release.product,
      version: r.release.version,
      release_payload_digest: r.release.payload_digest,
      release_envelope_digest: r.release.envelope_digest,
      rollout: r.rollout ?? null,
      transaction: r.transaction?.id ?? null,
      members: r.members?.length ?? null,
      activation: r.activation,
      health: r.health,
      timestamp: r.timestamp,
      candidate_digest: r.candidate_digest,
      previous_digest: r.previous_digest,
      resulting_digest: r.resulting_digest,
      payload_digest: payloadDigest,
      envelope_digest: envelopeDigest,
    };
    if (flags.json) {
      this.outJson(summary);
      return;
    }
    this.out(`device: ${summary.device} (tenant ${summary.tenant})`);
    this.out(`release: ${summary.product} ${summary.version}`);
    if (summary.transaction !== null) this.out(`transaction: ${summary.transaction} (${summary.members ?? 0} members)`);
    else if (summary.rollout !== null) this.out(`rollout: ${summary.rollout}`);
    this.out(`activation: ${summary.activation}`);
    this.out(`health: ${summary.health}`);
    this.out(`timestamp: ${summary.timestamp}`);
    if (r.members !== undefined) {
      // contracts §3: a transaction receipt carries its digests per member, in position order
      for (const m of r.members) {
        this.out(
          `member ${m.position} ${m.component} (group ${m.group}): ${m.verdict}; candidate ${m.candidate_digest}, previous ${m.previous_digest ?? 'none (first install)'}, resulting ${m.resulting_digest ?? 'none'}`,
        );
      }
    } else {
      this.out(`candidate digest: ${summary.candidate_digest}`);
      this.out(`previous digest: ${summary.previous_digest ?? 'none (first install)'}`);
      this.out(`resulting digest: ${summary.resulting_digest}`);
    }
    this.out(`payload digest: ${summary.payload_digest}`);
    this.out(`envelope digest: ${summary.envelope_digest}`);
  }
}
