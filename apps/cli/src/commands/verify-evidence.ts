import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../base-command.js';
import { MAX_HISTORY_BYTES, parseKeyHistory, readArchive, verifyArchive, type EvidenceTrust } from '../evidence.js';
import { MAX_BYTES, readText } from '../io.js';

export default class VerifyEvidence extends BaseCommand {
  static override summary = 'Verify a case evidence archive offline.';
  static override description =
    'Checks that manifest.dsse.json is a DSSE envelope (svc.case-evidence.v1) signed by the given ' +
    'Ed25519 evidence key (--key), or by a key of the published history (--keys, the JSON of GET ' +
    '/api/v1/evidence-keys) whose validity period holds the export time, that the manifest names ' +
    'that key, that manifest.json is present and is its signed payload byte for byte, ' +
    'and that every other file of the tar is ' +
    'listed in that manifest with its exact length and SHA-256, and nothing else is in the archive. ' +
    'Prints the case, the tenant, the export time and the number of files. Exit 0 verified, 1 ' +
    'refused (one line on stderr), 2 usage error.';
  static override examples = [
    {
      description: 'Verify an export with the evidence key downloaded from GET /api/v1/evidence-key',
      command: '<%= config.bin %> <%= command.id %> case.tar --key evidence.pub --tenant 3f1c2a9e-8a4b-4c1e-9d2f-6b7a8c9d0e1f',
    },
    {
      description: 'Verify an export made before a key rotation with the published key history',
      command: '<%= config.bin %> <%= command.id %> case.tar --keys evidence-keys.json',
    },
    {
      description: 'As JSON',
      command: '<%= config.bin %> <%= command.id %> case.tar --key evidence.pub --json',
    },
  ];
  static override args = {
    archive: Args.string({ description: 'case evidence archive (tar)', required: true }),
  };
  static override flags = {
    key: Flags.string({ description: "the tenant's evidence public key, Ed25519 SPKI PEM", exactlyOne: ['key', 'keys'], helpValue: 'PUB.pem' }),
    keys: Flags.string({
      description: 'the published evidence key history (GET /api/v1/evidence-keys): the key is picked by key id and must be valid at the export time',
      exactlyOne: ['key', 'keys'],
      helpValue: 'KEYS.json',
    }),
    tenant: Flags.string({ description: 'tenant UUID the manifest must name', helpValue: 'UUID' }),
    json: Flags.boolean({ description: 'print one JSON object instead of lines', default: false }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(VerifyEvidence);
    const rc = await import('@svc/release-core');
    const trust: EvidenceTrust =
      flags.keys !== undefined
        ? { history: parseKeyHistory(await readText(flags.keys, 'key history', MAX_HISTORY_BYTES)) }
        : { key: rc.parsePublicKeyPem(await readText(flags.key!, 'public key', MAX_BYTES.pem)) };
    const { manifest, keyid, manifestDigest } = verifyArchive(await readArchive(args.archive), trust, { tenant: flags.tenant });
    const summary = {
      case: manifest.case.id,
      kind: manifest.case.kind,
      state: manifest.case.state,
      title: manifest.case.title,
      tenant: manifest.tenant,
      exported_at: manifest.exported_at,
      exported_by: manifest.exported_by,
      files: manifest.files.length,
      keyid,
      manifest_digest: manifestDigest,
    };
    if (flags.json) {
      this.outJson(summary);
      return;
    }
    this.out(`case: ${summary.case} (${summary.kind}, ${summary.state}) ${summary.title}`);
    this.out(`tenant: ${summary.tenant}`);
    this.out(`exported: ${summary.exported_at} by ${summary.exported_by}`);
    this.out(`files: ${summary.files} verified`);
    this.out(`signed by: ${summary.keyid}`);
    this.out(`manifest digest: ${summary.manifest_digest}`);
  }
}
