import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../base-command.js';
import { MAX_BYTES, readInput, readText } from '../io.js';
import { parseTimestamp } from '../time.js';

export default class Verify extends BaseCommand {
  static override summary = 'Verify a signed release envelope offline.';
  static override description =
    'Checks that the payload bytes are canonical (RFC 8785), the DSSE signature is made by one of ' +
    'the given Ed25519 keys, the payload passes the svc.release.v1 rules, names the tenant and the ' +
    'product, and is valid now (or at --at). Prints the payload digest and the envelope digest ' +
    '(the digest of the TUF target the service publishes). Exit 0 verified, 1 refused (one line on ' +
    'stderr), 2 usage error.';
  static override examples = [
    {
      description: 'Verify against one trusted key',
      command:
        '<%= config.bin %> <%= command.id %> release.env.json --key customer-release.pub --tenant 3f1c2a9e-8a4b-4c1e-9d2f-6b7a8c9d0e1f --product gateway',
    },
    {
      description: 'Any of several trusted keys, at a given time, as JSON',
      command:
        '<%= config.bin %> <%= command.id %> release.env.json --key a.pub --key b.pub --tenant 3f1c2a9e-8a4b-4c1e-9d2f-6b7a8c9d0e1f --product gateway --at 2026-06-01T00:00:00Z --json',
    },
  ];
  static override args = {
    envelope: Args.string({ description: 'DSSE envelope JSON (svc.release.v1)', required: true }),
  };
  static override flags = {
    key: Flags.string({
      description: 'trusted Ed25519 public key, SPKI PEM (repeat for a set of trusted keys)',
      required: true,
      multiple: true,
      // without this `--key a.pub env.json` would swallow the envelope path as a second key
      multipleNonGreedy: true,
      helpValue: 'PUB.pem',
    }),
    tenant: Flags.string({ description: 'tenant UUID the release must name', required: true, helpValue: 'UUID' }),
    product: Flags.string({ description: 'product ID the release must name', required: true, helpValue: 'PRODUCT' }),
    at: Flags.string({ description: 'verify at this RFC 3339 time instead of now', helpValue: 'TIMESTAMP' }),
    json: Flags.boolean({ description: 'print one JSON object instead of lines', default: false }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Verify);
    // Usage problems first (exit 2), before any document is judged (exit 1).
    const now = flags.at === undefined ? new Date() : parseTimestamp(flags.at);
    const keyPems: string[] = [];
    for (const path of flags.key) keyPems.push(await readText(path, 'key', MAX_BYTES.pem));
    const bytes = await readInput(args.envelope, 'envelope', MAX_BYTES.document);
    const rc = await import('@svc/release-core');
    const trustedKeys = keyPems.map((pem) => rc.parsePublicKeyPem(pem));
    // spec §4 (offline verification tools): canonical payload bytes, DSSE signature, tenant,
    // product, authorizer key and validity: all checked by release-core, bytes before parse.
    const envelope = rc.parseEnvelope(bytes, { payloadTypes: [rc.RELEASE_PAYLOAD_TYPE] });
    const result = rc.verifyRelease(envelope, { trustedKeys, tenant: flags.tenant, product: flags.product, now });
    if (flags.json) {
      this.outJson({
        payload_digest: result.payloadDigest,
        envelope_digest: result.envelopeDigest,
        keyid: result.keyid,
        tenant: result.payload.tenant,
        product: result.payload.product,
        version: result.payload.release.version,
        not_before: result.payload.validity.not_before,
        not_after: result.payload.validity.not_after,
      });
      return;
    }
    // contracts §5: these two lines, verbatim, each on its own line.
    this.out(`payload digest: ${result.payloadDigest}`);
    this.out(`envelope digest: ${result.envelopeDigest}`);
    this.out(`keyid: ${result.keyid}`);
    this.out(`release: ${result.payload.product} ${result.payload.release.version}`);
    this.out(`valid: ${result.payload.validity.not_before} .. ${result.payload.validity.not_after}`);
  }
}
