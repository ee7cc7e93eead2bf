import { open, readdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { IDENTIFIER_PATTERNS, normalizeUuid, parsePublicKeyPem, type PublicKey } from '@svc/release-core';
import { AgentError } from './errors.js';
import { DOWNLOAD } from './staging/resume.js';

/** The four device release settings of spec §2.2, all provisioned together. */
export interface ReleaseSettings {
  tenant: string;
  product: string;
  profile: string;
  trustDir: string;
}

/**
 * How the agent holds its connection to the device channel:
 * - `per-check-in` (the default): connect for a check-in and what it starts (downloads,
 *   receipt and log uploads), close once no call has been in flight for `idleCloseS`; the
 *   server's memory follows the fleet's check-in rate, not its size (docs/agent.md);
 * - `persistent`: one connection kept open between check-ins.
 */
export const CONNECTION_MODES = ['per-check-in', 'persistent'] as const;
export type ConnectionMode = (typeof CONNECTION_MODES)[number];

export interface ConnectionSettings {
  mode: ConnectionMode;
  /** per-check-in: seconds without a call in flight before the connection is closed. */
  idleCloseS: number;
}

export const DEFAULT_CONNECTION: ConnectionSettings = Object.freeze({ mode: 'per-check-in', idleCloseS: 30 });

export interface AgentConfig {
  /** host:port of the device gRPC channel (the server's SVC_DEVICE_ADDR). */
  serverAddress: string;
  /** Journal, staging, outbox, placed files. Created by the agent. */
  dataDir: string;
  /** null: no release settings; legacy rollouts run, release pointers fail closed (spec §2.2 rule 2). */
  release: ReleaseSettings | null;
  /** Loop guard: resumptions of one transaction before it is failed. */
  maxResumptions: number;
  /** SVC_AGENT_CONNECTION, SVC_AGENT_IDLE_CLOSE_S. */
  connection: ConnectionSettings;
  /** SVC_AGENT_DOWNLOAD_ATTEMPTS: download attempts in a row without progress before the transaction fails. */
  downloadAttempts: number;
}

export const RELEASE_SETTING_NAMES = ['SVC_RELEASE_TENANT', 'SVC_RELEASE_PRODUCT', 'SVC_RELEASE_PROFILE', 'SVC_RELEASE_TRUST_DIR'] as const;

const { product: PRODUCT, profile: PROFILE } = IDENTIFIER_PATTERNS;

/** Reads the agent configuration from the environment; every bad setting named at once. */
export function loadConfig(env: Record<string, string | undefined> = process.env): AgentConfig {
  const problems: string[] = [];
  const present = RELEASE_SETTING_NAMES.filter((n) => (env[n] ?? '') !== '');
  // spec §2.2: all four must be provisioned together; a partial set is a startup error
  if (present.length > 0 && present.length < RELEASE_SETTING_NAMES.length) {
    const missing = RELEASE_SETTING_NAMES.filter((n) => !present.includes(n));
    throw new AgentError('RELEASE_SETTINGS_PARTIAL', `release settings are all-or-none (spec 2.2); missing: ${missing.join(', ')}`, {
      field: missing.join(','),
    });
  }
  let release: ReleaseSettings | null = null;
  if (present.length === RELEASE_SETTING_NAMES.length) {
    // a person types the tenant: either case is the same UUID, kept in canonical lowercase
    const tenant = normalizeUuid(env.SVC_RELEASE_TENANT);
    const product = env.SVC_RELEASE_PRODUCT!;
    const profile = env.SVC_RELEASE_PROFILE!;
    if (tenant === undefined) problems.push('SVC_RELEASE_TENANT: must be a UUID');
    if (!PRODUCT.test(product)) problems.push(`SVC_RELEASE_PRODUCT: must match ${PRODUCT.source}`);
    if (!PROFILE.test(profile)) problems.push(`SVC_RELEASE_PROFILE: must match ${PROFILE.source}`);
    if (tenant !== undefined) release = { tenant, product, profile, trustDir: resolve(env.SVC_RELEASE_TRUST_DIR!) };
  }
  const serverAddress = env.SVC_AGENT_SERVER ?? '127.0.0.1:8443';
  if (!/^[^\s:]+:\d{1,5}$/.test(serverAddress)) problems.push('SVC_AGENT_SERVER: must be host:port');
  const maxRaw = env.SVC_AGENT_MAX_RESUMPTIONS ?? '3';
  const maxResumptions = Number(maxRaw);
  if (!Number.isInteger(maxResumptions) || maxResumptions < 1 || maxResumptions > 100) {
    problems.push('SVC_AGENT_MAX_RESUMPTIONS: must be an integer 1..100');
  }
  const attemptsRaw = (env.SVC_AGENT_DOWNLOAD_ATTEMPTS ?? '') === '' ? String(DOWNLOAD.defaultAttempts) : env.SVC_AGENT_DOWNLOAD_ATTEMPTS!;
  const downloadAttempts = Number(attemptsRaw);
  if (!/^\d{1,3}$/.test(attemptsRaw) || downloadAttempts < 1 || downloadAttempts > 100) problems.push('SVC_AGENT_DOWNLOAD_ATTEMPTS: must be an integer 1..100');
  const mode = (env.SVC_AGENT_CONNECTION ?? '') === '' ? 'per-check-in' : env.SVC_AGENT_CONNECTION!;
  if (!(CONNECTION_MODES as readonly string[]).includes(mode)) problems.push(`SVC_AGENT_CONNECTION: must be ${CONNECTION_MODES.join(' or ')}`);
  const idleRaw = (env.SVC_AGENT_IDLE_CLOSE_S ?? '') === '' ? '30' : env.SVC_AGENT_IDLE_CLOSE_S!;
  const idleCloseS = Number(idleRaw);
  if (!/^\d{1,4}$/.test(idleRaw) || idleCloseS < 1 || idleCloseS > 3600) problems.push('SVC_AGENT_IDLE_CLOSE_S: must be an integer number of seconds 1..3600');
  if (problems.length > 0) {
    throw new AgentError('CONFIG_INVALID', `invalid agent configuration: ${problems.join('; ')}`, {
      field: problems.map((p) => p.split(':')[0]).join(','),
    });
  }
  return {
    serverAddress,
    dataDir: resolve(env.SVC_AGENT_DATA_DIR ?? './.svc-agent'),
    release,
    maxResumptions,
    connection: { mode: mode as ConnectionMode, idleCloseS },
    downloadAttempts,
  };
}

const MAX_KEY_FILES = 64;
const MAX_KEY_BYTES = 16 * 1024;

/**
 * Loads the pinned customer Ed25519 keys. The trust dir is a local anchor the control
 * plane never changes (spec §2.2 rule 1): every file is opened read-only, nothing is written.
 */
export async function loadTrustKeys(trustDir: string): Promise<PublicKey[]> {
  let names: string[];
  try {
    names = (await readdir(trustDir)).filter((n) => n.endsWith('.pem')).sort();
  } catch (cause) {
    throw new AgentError('TRUST_DIR_INVALID', `SVC_RELEASE_TRUST_DIR ${trustDir} cannot be read`, {
      cause,
      field: 'SVC_RELEASE_TRUST_DIR',
    });
  }
  if (names.length === 0 || names.length > MAX_KEY_FILES) {
    throw new AgentError('TRUST_DIR_INVALID', `SVC_RELEASE_TRUST_DIR ${trustDir} must hold 1..${MAX_KEY_FILES} .pem files, found ${names.length}`, {
      field: 'SVC_RELEASE_TRUST_DIR',
    });
  }
  const keys: PublicKey[] = [];
  for (const name of names) {
    const handle = await open(join(trustDir, name), 'r');
    try {
      const buf = Buffer.alloc(MAX_KEY_BYTES + 1);
      const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
      if (bytesRead > MAX_KEY_BYTES) {
        throw new AgentError('TRUST_DIR_INVALID', `trust key ${name} exceeds ${MAX_KEY_BYTES} bytes`, { field: name });
      }
      let key: PublicKey;
      try {
        key = parsePublicKeyPem(buf.subarray(0, bytesRead).toString('utf8'));
      } catch (cause) {
        throw new AgentError('TRUST_DIR_INVALID', `trust key ${name} is not an SPKI PEM public key`, { cause, field: name });
      }
      // spec §5 rule 8: release verification uses customer Ed25519 keys only
      if (key.alg !== 'ed25519') {
        throw new AgentError('TRUST_DIR_INVALID', `trust key ${name} is ${key.alg}, expected ed25519`, { field: name });
      }
      keys.push(key);
    } finally {
      await handle.close();
    }
  }
  return keys;
}
