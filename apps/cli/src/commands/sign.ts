import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../base-command.js';
import { MAX_BYTES, readJson, readText, writeOutput } from '../io.js';

export default class Sign extends BaseCommand {
  static override summary = 'Sign a release payload (svc.release.v1) into a DSSE envelope.';
  static override description =
    'Validates PAYLOAD.json against the svc.release.v1 rules (every bad field is listed), ' +
    'canonicalizes it (RFC 8785) and signs the DSSE PAE with the Ed25519 key. The envelope is ' +
    'written as canonical JSON: those bytes are exactly the TUF target the service publishes. ' +
    'With --out the payload and envelope digests are printed.';
  static override examples = [
    {
      description: 'Sign and write the envelope to a file',
      command: '<%= config.bin %> <%= command.id %> release.json --key customer-release.key --out release.env.json',
    },
    {
      description: 'Sign and submit in one pipeline',
      command: '<%= config.bin %> <%= command.id %> release.json --key customer-release.key | jq \'{envelope: ., expected_product: "gateway"}\'',
    },
  ];
  static override args = {
    payload: Args.string({ description: 'release payload JSON (svc.release.v1)', required: true }),
  };
  static override flags = {
    key: Flags.string({ description: 'Ed25519 private key, PKCS#8 PEM', required: true, helpValue: 'KEY.pem' }),
    out: Flags.string({ description: 'write the envelope here instead of stdout (replaced if it exists)', helpValue: 'ENV.json' }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Sign);
    const keyPem = await readText(flags.key, 'key', MAX_BYTES.pem);
    const payload = await readJson(args.payload, 'payload');
    const rc = await import('@svc/release-core');
    const key = rc.parsePrivateKeyPem(keyPem);
    // contracts §5 / spec §4: validate (all issues at once), canonicalize, sign: release-core does all three.
    const envelope = rc.signRelease(payload, key);
    const bytes = rc.envelopeBytes(envelope);
    if (flags.out === undefined) {
      process.stdout.write(bytes);
      // A newline only for a person at a terminal: redirected output stays the exact target bytes.
      if (process.stdout.isTTY) process.stdout.write('\n');
      return;
    }
    await writeOutput(flags.out, bytes, { exclusive: false });
    this.out(`payload digest: ${rc.sha256Digest(Buffer.from(envelope.payload, 'base64'))}`);
    this.out(`envelope digest: ${rc.envelopeDigest(envelope)}`);
    this.out(`keyid: ${key.publicKey.keyid}`);
  }
}
