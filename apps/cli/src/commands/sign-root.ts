import { createPrivateKey, sign } from 'node:crypto';
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../base-command.js';
import { CliError } from '../errors.js';
import { MAX_BYTES, readJson, readText, writeOutput } from '../io.js';

type RootMd = import('@tufjs/models').Metadata<import('@tufjs/models').Root>;
const ONLINE_ROLES = ['targets', 'snapshot', 'timestamp'] as const;

export default class SignRoot extends BaseCommand {
  static override summary = 'Sign a TUF root (the next version of a tenant repository) with offline root keys.';
  static override description =
    'Reads ROOT.json, root version N+1 as the service prepared it for an online key rotation ' +
    '(GET /api/v1/tuf-key-rotations/pending/root.json), and the trusted root version N (--trusted, ' +
    'e.g. GET /api/v1/tuf/<tenant>/metadata/N.root.json). Refuses a document that is not root ' +
    'metadata or not version N+1, and a key that is a root key of neither root. Prints what ' +
    'changes from N to N+1 (the keys of each role) so the holders see what they sign, signs the ' +
    'canonical JSON of `signed` with each Ed25519 key (signatures already present are kept: ' +
    'holders of a threshold sign one after another) and writes the document. Then reports ' +
    'whether the signatures meet the root threshold of N and of N+1, the two checks the service ' +
    'and every device make.';
  static override examples = [
    {
      description: 'Sign the prepared root 4 with the offline root key',
      command: '<%= config.bin %> <%= command.id %> 4.root.unsigned.json --trusted 3.root.json --key root.key --out 4.root.json',
    },
    {
      description: 'Two holders of a 2-of-3 root: the second signs the first one`s output',
      command: '<%= config.bin %> <%= command.id %> 4.root.a.json --trusted 3.root.json --key root-b.key --out 4.root.json --json',
    },
  ];
  static override args = {
    root: Args.string({ description: 'root metadata N+1 to sign (JSON)', required: true }),
  };
  static override flags = {
    key: Flags.string({ description: 'Ed25519 root private key, PKCS#8 PEM (repeat for several)', required: true, multiple: true, helpValue: 'KEY.pem' }),
    trusted: Flags.string({ description: 'the current root metadata N the devices trust', required: true, helpValue: 'N.root.json' }),
    out: Flags.string({ description: 'write the signed root here instead of stdout (replaced if it exists)', helpValue: 'SIGNED.json' }),
    json: Flags.boolean({ description: 'print the summary as one JSON object', default: false }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(SignRoot);
    const { Metadata, MetadataKind, Signature } = await import('@tufjs/models');
    const rc = await import('@svc/release-core');
    const parse = async (path: string, what: string): Promise<RootMd> => {
      const doc = await readJson(path, what);
      try {
        return Metadata.fromJSON(MetadataKind.Root, doc as Parameters<typeof Metadata.fromJSON>[1]);
      } catch (e) {
        throw new CliError('ROOT_INVALID', `${what} ${path}: not TUF root metadata (${(e as Error).message})`, { cause: e });
      }
    };
    const trusted = await parse(flags.trusted, 'trusted root');
    const next = await parse(args.root, 'root');
    if (next.signed.version !== trusted.signed.version + 1) {
      throw new CliError(
        'ROOT_INVALID',
        `root ${args.root} is version ${next.signed.version}, the trusted root is version ${trusted.signed.version}: sign version ${trusted.signed.version + 1}`,
      );
    }
    const rootIds = new Set([...(trusted.signed.roles['root']?.keyIDs ?? []), ...(next.signed.roles['root']?.keyIDs ?? [])]);
    const signers: string[] = [];
    for (const [i, path] of flags.key.entries()) {
      const key = rc.parsePrivateKeyPem(await readText(path, `key[${i}]`, MAX_BYTES.pem));
      if (key.alg !== 'ed25519') throw new CliError('ROOT_KEY_UNKNOWN', `key ${path}: root keys are Ed25519, this one is ${key.alg}`);
      // contracts §1: root names keys by their TUF key id
      const keyId = rc.tufKeyId('ed25519', 'ed25519', { public: Buffer.from(key.publicKey.raw).toString('hex') });
      if (!rootIds.has(keyId)) {
        throw new CliError(
          'ROOT_KEY_UNKNOWN',
          `key ${path} (TUF key id ${keyId}) is not a root key of root version ${trusted.signed.version} or ${next.signed.version}`,
        );
      }
      const privateKey = createPrivateKey({ key: Buffer.from(key.pkcs8), format: 'der', type: 'pkcs8' });
      next.sign((data) => new Signature({ keyID: keyId, sig: sign(null, data, privateKey).toString('hex') }), true);
      signers.push(keyId);
    }
    const bytes = Buffer.from(JSON.stringify(next.toJSON()));
    if (flags.out === undefined) process.stdout.write(bytes);
    else await writeOutput(flags.out, bytes, { exclusive: false });

    const summary = {
      version: next.signed.version,
      signed_by: signers,
      changes: changesOf(trusted, next),
      // TUF client workflow 5.3.4 and 5.3.5: what the service checks before accepting it
      threshold_trusted: thresholdOf(trusted, next),
      threshold_new: thresholdOf(next, next),
    };
    // with the document on stdout the summary goes to stderr, so the output stays the exact document
    const say = flags.out === undefined ? (l: string) => process.stderr.write(`${l}\n`) : (l: string) => this.out(l);
    if (flags.json) {
      say(JSON.stringify(summary));
      return;
    }
    say(`root version: ${summary.version}`);
    for (const c of summary.changes) say(`${c.role}: ${c.from.join(',') || '-'} -> ${c.to.join(',') || '-'}`);
    if (summary.changes.length === 0) say('keys: unchanged');
    for (const [label, t] of [
      [`root ${trusted.signed.version}`, summary.threshold_trusted],
      [`root ${next.signed.version}`, summary.threshold_new],
    ] as const) {
      say(`signatures of ${label}: ${t.valid} of ${t.threshold} needed${t.valid >= t.threshold ? '' : ' (more root key holders must sign)'}`);
    }
  }
}

/** The roles whose key ids differ between the two roots. */
function changesOf(a: RootMd, b: RootMd): { role: string; from: string[]; to: string[] }[] {
  return ['root', ...ONLINE_ROLES].flatMap((role) => {
    const from = a.signed.roles[role]?.keyIDs ?? [];
    const to = b.signed.roles[role]?.keyIDs ?? [];
    return from.join() === to.join() ? [] : [{ role, from, to }];
  });
}

/** Valid signatures on `md` by root keys of `by`, and the threshold `by` sets for root. */
function thresholdOf(by: RootMd, md: RootMd): { valid: number; threshold: number } {
  const role = by.signed.roles['root'];
  const valid = (role?.keyIDs ?? []).filter((id) => {
    const key = by.signed.keys[id];
    if (key === undefined) return false;
    try {
      key.verifySignature(md);
      return true;
    } catch {
      return false;
    }
  }).length;
  return { valid, threshold: role?.threshold ?? 1 };
}
