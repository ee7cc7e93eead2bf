import { Flags } from '@oclif/core';
import { BaseCommand } from '../base-command.js';
import { assertAbsent, writeOutput } from '../io.js';

export default class Keygen extends BaseCommand {
  static override summary = 'Generate an Ed25519 release-signing key pair.';
  static override description =
    'Writes PREFIX.key (PKCS#8 PEM, mode 0600) and PREFIX.pub (SPKI PEM) and prints the key id ' +
    '(sha256 of the SubjectPublicKeyInfo DER). Register PREFIX.pub as an authorizer key with the ' +
    "service and place it in the devices' trust directory; keep PREFIX.key offline. Existing files " +
    'are never replaced unless --force is given.';
  static override examples = [
    {
      description: 'Create customer-release.key and customer-release.pub in the current directory',
      command: '<%= config.bin %> <%= command.id %> --out customer-release',
    },
    {
      description: 'Print the key id and both paths as JSON',
      command: '<%= config.bin %> <%= command.id %> --out keys/release --json',
    },
  ];
  static override flags = {
    out: Flags.string({ description: 'path prefix: PREFIX.key and PREFIX.pub are written', required: true, helpValue: 'PREFIX' }),
    force: Flags.boolean({ description: 'replace existing PREFIX.key and PREFIX.pub', default: false }),
    json: Flags.boolean({ description: 'print {"keyid", "private_key", "public_key"} as one JSON object', default: false }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Keygen);
    const keyPath = `${flags.out}.key`;
    const pubPath = `${flags.out}.pub`;
    // Checked before generating so a refusal never leaves half a pair behind.
    if (!flags.force) await assertAbsent([keyPath, pubPath]);
    const { generateKeyPair } = await import('@svc/release-core');
    // contracts §1: private keys are PKCS#8 PEM, public keys SPKI PEM; keyid over SPKI DER.
    const key = generateKeyPair('ed25519');
    // The private key is written first and only readable by its owner: a key that
    // leaked through a loose mode cannot be un-leaked.
    await writeOutput(keyPath, key.pem, { exclusive: !flags.force, mode: 0o600 });
    await writeOutput(pubPath, key.publicKey.pem, { exclusive: !flags.force, mode: 0o644 });
    if (flags.json) {
      this.outJson({ keyid: key.publicKey.keyid, private_key: keyPath, public_key: pubPath });
    } else {
      this.out(`keyid: ${key.publicKey.keyid}`);
      this.out(`private key: ${keyPath}`);
      this.out(`public key: ${pubPath}`);
    }
  }
}
