import { resolve } from 'node:path';
import { ConfigError } from '../config.js';
import type { Kysely } from 'kysely';
import type { Database } from '../store/database.js';
import { openFileKek } from './file-kek.js';
import { WrappedKeys } from './wrapped-keys.js';
import type { Kek } from './kek.js';
import { DEFAULT_PKCS11_KEY_LABEL, Pkcs11Kek, type Pkcs11KekOptions } from './pkcs11-kek.js';

/**
 * Where the KEK comes from (docs/server.md "Key encryption"): a PKCS#11 token, a key file
 * outside the data directory, or, for the embedded database only, a key file the server
 * generates beside the data directory (`<data dir>.kek`). With PostgreSQL one of the first
 * two is required: processes on several hosts must open the same KEK, and a KEK made up by
 * one host would lock the others out of every key.
 */
export type KekSource = ({ kind: 'pkcs11' } & Pkcs11KekOptions) | { kind: 'file'; path: string } | { kind: 'generated'; path: string };

export interface KekEnvNames {
  module: string;
  token: string;
  keyLabel: string;
  pinFile: string;
  file: string;
}

export const KEK_ENV: KekEnvNames = {
  module: 'SVC_KEK_PKCS11_MODULE',
  token: 'SVC_KEK_PKCS11_TOKEN',
  keyLabel: 'SVC_KEK_PKCS11_KEY_LABEL',
  pinFile: 'SVC_KEK_PKCS11_PIN_FILE',
  file: 'SVC_KEK_FILE',
};

/** The embedded default: a sibling of the data directory, so copying the data directory does not copy the KEK. */
export function defaultKekPath(dataDir: string): string {
  return `${resolve(dataDir)}.kek`;
}

const nonEmpty = (v: string | undefined) => (v === undefined || v.trim() === '' ? undefined : v.trim());

/**
 * The KEK source the settings name (`vars` read from `env`, so `rewrap-keys` can parse the
 * new KEK's flags with the same rules). `fallback`: what applies when nothing is set.
 */
export function kekSourceFrom(
  env: Record<string, string | undefined>,
  o: { dataDir: string; cwd?: string; fallback: 'generated' | 'refuse'; refusal?: string; names?: KekEnvNames },
): KekSource {
  const n = o.names ?? KEK_ENV;
  const module = nonEmpty(env[n.module]);
  const file = nonEmpty(env[n.file]);
  const cwd = o.cwd ?? process.cwd();
  if (module !== undefined && file !== undefined) throw new ConfigError(`${n.module} and ${n.file}: set one KEK source, not both`);
  if (module !== undefined) {
    const token = nonEmpty(env[n.token]);
    const pinFile = nonEmpty(env[n.pinFile]);
    if (token === undefined) throw new ConfigError(`${n.token}: required with ${n.module} (the label of the token holding the KEK)`);
    if (pinFile === undefined) throw new ConfigError(`${n.pinFile}: required with ${n.module} (a file holding the token's user PIN)`);
    const keyLabel = nonEmpty(env[n.keyLabel]) ?? DEFAULT_PKCS11_KEY_LABEL;
    return { kind: 'pkcs11', module: resolve(cwd, module), token, keyLabel, pinFile: resolve(cwd, pinFile) };
  }
  for (const v of [n.token, n.pinFile, n.keyLabel]) {
    if (nonEmpty(env[v]) !== undefined) throw new ConfigError(`${v}: set only with ${n.module}`);
  }
  if (file !== undefined) return { kind: 'file', path: resolve(cwd, file) };
  if (o.fallback === 'refuse') throw new ConfigError(o.refusal ?? `${n.file} or ${n.module}: a KEK is required`);
  return { kind: 'generated', path: defaultKekPath(o.dataDir) };
}

/** The server's KEK settings: the generated default only with the embedded database. */
export function kekSourceFromEnv(env: NodeJS.ProcessEnv, o: { dataDir: string; postgres: boolean; cwd?: string }): KekSource {
  return kekSourceFrom(env, {
    dataDir: o.dataDir,
    ...(o.cwd !== undefined ? { cwd: o.cwd } : {}),
    fallback: o.postgres ? 'refuse' : 'generated',
    refusal:
      'SVC_KEK_FILE or SVC_KEK_PKCS11_MODULE: required with SVC_DATABASE_URL (every server process must open the same key-encryption key; see docs/server.md#key-encryption)',
  });
}

/** Opens the KEK a source names; KekError (one line) when it cannot. */
export async function openKek(source: KekSource, dataDir: string): Promise<Kek> {
  switch (source.kind) {
    case 'pkcs11':
      return Pkcs11Kek.open(source);
    case 'file':
      return openFileKek(source.path, dataDir);
    case 'generated':
      return openFileKek(source.path, dataDir, { create: true });
  }
}

/** One line for the start log: which KEK, never its bytes. */
export function describeKekSource(s: KekSource): string {
  if (s.kind === 'pkcs11') return `PKCS#11 token ${JSON.stringify(s.token)} key ${JSON.stringify(s.keyLabel)} (${s.module})`;
  return `${s.kind === 'generated' ? 'generated key file' : 'key file'} ${s.path}`;
}

/** Wrapped keys under the embedded default KEK of `dataDir` (generated on first use): the library default of SigningRepository. */
export function defaultWrappedKeys(db: Kysely<Database>, dataDir: string): WrappedKeys {
  return new WrappedKeys(db, () => openFileKek(defaultKekPath(dataDir), dataDir, { create: true }));
}
