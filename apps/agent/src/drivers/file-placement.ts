import { createHash } from 'node:crypto';
import { chmod, chown, copyFile, link, mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import { createReadStream } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { digestFromHex, type Digest, type MemberKind } from '@svc/release-core';
import { AgentError } from '../errors.js';
import { fsyncDir } from '../journal/io.js';
import { crashPoint } from '../state-machine/crash-points.js';
import type { ActivationResult, MemberDriver, MemberSpec, PlacementAccess } from './driver.js';
import { runCommand } from './run.js';

export interface FilePlacementOptions {
  kind: Extract<MemberKind, 'model' | 'config' | 'service-binary'>;
  /** Default root when a component has no placement: `<dataDir>/placed/<kind>/<component>`. */
  dataDir: string;
  /** service-binary: argv run after activate and rollback; `{unit}` is the component name. */
  restartCommand?: readonly string[];
  /** The account databases owner and group names are looked up in (tests point elsewhere). */
  passwdFile?: string;
  groupFile?: string;
}

/** The numeric id of `name` in a passwd(5) or group(5) file (name:x:id:...). */
async function idOf(file: string, name: string): Promise<number | undefined> {
  for (const line of (await readFile(file, 'utf8')).split('\n')) {
    const f = line.split(':');
    if (f[0] === name && f.length >= 3 && /^\d+$/.test(f[2]!)) return Number(f[2]);
  }
  return undefined;
}

export async function fileDigest(path: string): Promise<Digest> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return digestFromHex(hash.digest('hex'));
}

/** Whether `path` exists (any other stat error is thrown). */
export async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw e;
  }
}

export async function fsyncFile(path: string): Promise<void> {
  const h = await open(path, 'r');
  try {
    await h.sync();
  } finally {
    await h.close();
  }
}

/**
 * Places models, configurations and service binaries atomically. Beside the live file P:
 * `P.svc-new` (staged), `P.svc-prev` (hard link to the replaced version) or `P.svc-none`
 * (marker: there was no previous version). Every step is a rename or a link, so a crash
 * leaves either the old or the new file at P, and rollback is always possible.
 */
export class FilePlacementDriver implements MemberDriver {
  readonly kind: FilePlacementOptions['kind'];
  private readonly opts: FilePlacementOptions;

  constructor(opts: FilePlacementOptions) {
    this.kind = opts.kind;
    this.opts = opts;
  }

  pathOf(member: MemberSpec): string {
    if (member.placement !== undefined) {
      if (!isAbsolute(member.placement) || member.placement.split('/').includes('..')) {
        throw new AgentError('STAGE_FAILED', `placement of ${member.component} must be an absolute path without ..`, {
          field: `components.${member.component}.placement`,
        });
      }
      return member.placement;
    }
    return join(this.opts.dataDir, 'placed', this.kind, member.component);
  }

  async currentDigest(member: MemberSpec): Promise<Digest | null> {
    const p = this.pathOf(member);
    return (await exists(p)) ? fileDigest(p) : null;
  }

  async deltaSource(member: MemberSpec): Promise<string | null> {
    const p = this.pathOf(member);
    return (await exists(p)) ? p : null;
  }

  async stage(member: MemberSpec, stagedFile: string): Promise<void> {
    const p = this.pathOf(member);
    await mkdir(dirname(p), { recursive: true });
    await copyFile(stagedFile, `${p}.svc-new.tmp`);
    await this.applyAccess(member, `${p}.svc-new.tmp`);
    await fsyncFile(`${p}.svc-new.tmp`);
    await rename(`${p}.svc-new.tmp`, `${p}.svc-new`);
    const got = await fileDigest(`${p}.svc-new`);
    if (got !== member.digest) {
      throw new AgentError('DIGEST_MISMATCH', `staged ${member.component} has ${got}, signed ${member.digest}`, {
        field: `components.${member.component}.digest`,
      });
    }
    await fsyncDir(dirname(p));
  }

  async activate(member: MemberSpec): Promise<ActivationResult> {
    const p = this.pathOf(member);
    if (!(await exists(`${p}.svc-new`))) {
      throw new AgentError('ACTIVATION_FAILED', `${member.component} is not staged`, { field: member.component });
    }
    // Keep the previous version exactly once: a retried activation must not overwrite it.
    if (!(await exists(`${p}.svc-prev`)) && !(await exists(`${p}.svc-none`))) {
      if (await exists(p)) await link(p, `${p}.svc-prev`);
      else await (await open(`${p}.svc-none`, 'w')).close();
      await fsyncDir(dirname(p));
    }
    await rm(`${p}.svc-tmp`, { force: true });
    await link(`${p}.svc-new`, `${p}.svc-tmp`);
    crashPoint('mid-driver-write');
    await rename(`${p}.svc-tmp`, p);
    await fsyncDir(dirname(p));
    await this.restart(member);
    return { needsReboot: false };
  }

  async rollback(member: MemberSpec): Promise<void> {
    const p = this.pathOf(member);
    if (await exists(`${p}.svc-prev`)) {
      await rename(`${p}.svc-prev`, p);
    } else if (await exists(`${p}.svc-none`)) {
      await rm(p, { force: true });
      await rm(`${p}.svc-none`, { force: true });
    } else {
      return; // never activated, or already restored
    }
    await fsyncDir(dirname(p));
    await this.restart(member);
  }

  async commit(member: MemberSpec): Promise<void> {
    const p = this.pathOf(member);
    for (const suffix of ['.svc-prev', '.svc-none', '.svc-new', '.svc-tmp']) await rm(`${p}${suffix}`, { force: true });
    await fsyncDir(dirname(p));
  }

  /**
   * contracts §2: the signed placement mode, owner and group, set on the staged file before it
   * is renamed into place (activation links that same inode, rollback brings the old inode
   * back with its own). Without a mode: 0755 for a service binary, 0644 otherwise.
   */
  private async applyAccess(member: MemberSpec, file: string): Promise<void> {
    const a: PlacementAccess = member.access ?? {};
    const field = (f: string) => `components.${member.component}.placement.${f}`;
    if (a.mode !== undefined && !/^0?[0-7]{3}$/.test(a.mode)) {
      throw new AgentError('STAGE_FAILED', `placement mode ${JSON.stringify(a.mode)} of ${member.component} is not an octal mode`, { field: field('mode') });
    }
    const mode = a.mode !== undefined ? parseInt(a.mode, 8) : this.kind === 'service-binary' ? 0o755 : 0o644;
    if (a.owner !== undefined || a.group !== undefined) {
      const uid = a.owner === undefined ? -1 : await idOf(this.opts.passwdFile ?? '/etc/passwd', a.owner);
      const gid = a.group === undefined ? -1 : await idOf(this.opts.groupFile ?? '/etc/group', a.group);
      if (uid === undefined)
        throw new AgentError('STAGE_FAILED', `placement owner ${a.owner} of ${member.component}: no such user on this device`, { field: field('owner') });
      if (gid === undefined)
        throw new AgentError('STAGE_FAILED', `placement group ${a.group} of ${member.component}: no such group on this device`, { field: field('group') });
      try {
        await chown(file, uid, gid);
      } catch (cause) {
        throw new AgentError('STAGE_FAILED', `cannot give ${member.component} to ${a.owner ?? ''}:${a.group ?? ''}: ${(cause as Error).message}`, {
          cause,
          field: field(a.owner !== undefined ? 'owner' : 'group'),
        });
      }
    }
    // after chown: changing the owner clears set-id bits
    await chmod(file, mode);
  }

  private async restart(member: MemberSpec): Promise<void> {
    if (this.kind !== 'service-binary') return;
    const argv = (this.opts.restartCommand ?? ['systemctl', 'restart', '{unit}']).map((a) => a.replaceAll('{unit}', member.component));
    const r = await runCommand(argv, { timeoutMs: 60_000 });
    if (r.code !== 0) {
      throw new AgentError('ACTIVATION_FAILED', `restart of ${member.component} (${argv.join(' ')}) exited ${r.code}: ${r.stderr.trim().slice(0, 200)}`, {
        field: member.component,
      });
    }
  }
}
