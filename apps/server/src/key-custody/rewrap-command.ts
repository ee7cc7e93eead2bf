import { parseArgs } from 'node:util';
import { ConfigError } from '../config.js';
import { kekSourceFrom, type KekEnvNames, type KekSource } from './kek-source.js';

/** The flags of `node dist/main.js rewrap-keys`, named like the KEK settings they stand for. */
const NEW_KEK_FLAGS: KekEnvNames = {
  module: '--new-kek-pkcs11-module',
  token: '--new-kek-pkcs11-token',
  keyLabel: '--new-kek-pkcs11-key-label',
  pinFile: '--new-kek-pkcs11-pin-file',
  file: '--new-kek-file',
};

/**
 * Parses `rewrap-keys` flags into the new KEK's source (the same rules as the SVC_KEK_*
 * settings; one of --new-kek-file and --new-kek-pkcs11-module is required). ConfigError names
 * the flag.
 */
export function newKekSourceFromArgs(args: string[], dataDir: string): KekSource {
  let values: Record<string, unknown>;
  try {
    ({ values } = parseArgs({
      args,
      strict: true,
      allowPositionals: false,
      options: Object.fromEntries(Object.values(NEW_KEK_FLAGS).map((f: string) => [f.slice(2), { type: 'string' as const }])),
    }));
  } catch (e) {
    throw new ConfigError(`rewrap-keys: ${(e as Error).message}`);
  }
  const env = Object.fromEntries(Object.entries(values).map(([k, v]) => [`--${k}`, typeof v === 'string' ? v : undefined]));
  return kekSourceFrom(env, {
    dataDir,
    fallback: 'refuse',
    names: NEW_KEK_FLAGS,
    refusal: 'rewrap-keys: give the new KEK with --new-kek-file PATH or --new-kek-pkcs11-module PATH (with --new-kek-pkcs11-token, --new-kek-pkcs11-pin-file)',
  });
}
