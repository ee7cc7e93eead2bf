import { copyFile, link, mkdir, open, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { AgentError } from '../errors.js';
import { digestHex, isDigest, type Digest } from '@svc/release-core';
import { fsyncDir } from '../journal/io.js';
import { crashPoint } from '../state-machine/crash-points.js';
import type { ActivationResult, DriverFacts, MemberDriver, MemberSpec } from './driver.js';
import { exists, fsyncFile } from './file-placement.js';
import { containerRuntimeCli, parseLoadedImage, type ContainerRuntimeCli } from './container-runtime.js';
import { runCommand, type RunResult } from './run.js';

export interface ContainerDriverOptions {
  runtime?: ContainerRuntimeCli;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
  /**
   * Where the image archive of each component's live version is kept, as
   * `<archiveDir>/<component>.tar`, for deltas (docs/delta-updates.md "Container members");
   * without it no archive is kept and container members always take the full download.
   */
  archiveDir?: string;
}

/**
 * Containers through a runtime CLI. The live container is `svc-<component>`; during a
 * transaction the replaced one waits, stopped, as `svc-<component>-prev` until commit.
 * Images are tagged `svc/<component>:<digest hex>` so a retry finds what it staged.
 *
 * With an `archiveDir`, the image archive of the live version is kept as a file, A =
 * `<archiveDir>/<component>.tar`, for a delta to be applied to (the runtime's store cannot
 * give the signed archive back). It moves as the file driver moves a placed file: staged as
 * `A.svc-new`, kept once as `A.svc-prev` (a hard link) or `A.svc-none` (there was none) when
 * activation renames the new one over A, restored by rollback, and the kept previous one
 * removed at commit. So at rest there is one archive per component, that of the live image.
 */
export class ContainerDriver implements MemberDriver {
  readonly kind = 'container' as const;
  private readonly cli: ContainerRuntimeCli;
  private readonly env: NodeJS.ProcessEnv | undefined;
  private readonly timeoutMs: number;
  private readonly archiveDir: string | undefined;

  constructor(opts: ContainerDriverOptions = {}) {
    this.cli = opts.runtime ?? containerRuntimeCli('docker');
    this.env = opts.env;
    this.timeoutMs = opts.timeoutMs ?? 300_000;
    this.archiveDir = opts.archiveDir;
  }

  static names(member: MemberSpec): { live: string; prev: string; image: string } {
    const hex = digestHex(member.digest);
    return { live: `svc-${member.component}`, prev: `svc-${member.component}-prev`, image: `svc/${member.component}:${hex}` };
  }

  async currentDigest(member: MemberSpec): Promise<Digest | null> {
    const r = await this.run(this.cli.inspectDigest(ContainerDriver.names(member).live), false);
    const out = r.stdout.trim();
    return r.code === 0 && isDigest(out) ? out : null;
  }

  /** The kept archive of the component's live image; null without an `archiveDir`. */
  archiveOf(member: MemberSpec): string | null {
    return this.archiveDir === undefined ? null : join(this.archiveDir, `${member.component}.tar`);
  }

  /** The kept archive, when there is one: the delta's source (its digest is checked before use). */
  async deltaSource(member: MemberSpec): Promise<string | null> {
    const a = this.archiveOf(member);
    return a !== null && (await exists(a)) ? a : null;
  }

  async stage(member: MemberSpec, stagedFile: string): Promise<DriverFacts> {
    const r = await this.run(this.cli.load(stagedFile));
    const loaded = parseLoadedImage(r.stdout);
    if (loaded === null) {
      throw new AgentError('STAGE_FAILED', `${this.cli.binary} load of ${member.component} printed no image`, { field: member.component });
    }
    const { image } = ContainerDriver.names(member);
    await this.run(this.cli.tag(loaded, image));
    await this.stageArchive(member, stagedFile);
    return { image };
  }

  async activate(member: MemberSpec): Promise<ActivationResult> {
    const { live, prev, image } = ContainerDriver.names(member);
    await this.swapArchive(member);
    const hasPrev = await this.exists(prev);
    if (!hasPrev && (await this.exists(live))) {
      await this.run(this.cli.stop(live));
      await this.run(this.cli.rename(live, prev));
    } else if (hasPrev) {
      // A retried activation: whatever is live now is ours from the interrupted attempt.
      await this.run(this.cli.remove(live));
    }
    await this.run(this.cli.run(live, image, member.digest));
    return { needsReboot: false, facts: { image } };
  }

  async rollback(member: MemberSpec): Promise<void> {
    const { live, prev } = ContainerDriver.names(member);
    if (await this.exists(prev)) {
      await this.run(this.cli.remove(live));
      await this.run(this.cli.rename(prev, live));
      await this.run(this.cli.start(live));
    } else if ((await this.currentDigest(member)) === member.digest) {
      // First install of this component: nothing to restore, remove ours.
      await this.run(this.cli.remove(live));
    }
    // Otherwise already restored: rollback is idempotent.
    await this.restoreArchive(member);
  }

  async commit(member: MemberSpec): Promise<void> {
    await this.run(this.cli.remove(ContainerDriver.names(member).prev));
    const a = this.archiveOf(member);
    if (a === null) return;
    for (const suffix of ['.svc-prev', '.svc-none', '.svc-new', '.svc-tmp', '.svc-new.tmp']) await rm(`${a}${suffix}`, { force: true });
    await fsyncDir(dirname(a));
  }

  /** stage: the verified archive beside the kept one as `A.svc-new` (a hard link to the staged file where possible). */
  private async stageArchive(member: MemberSpec, stagedFile: string): Promise<void> {
    const a = this.archiveOf(member);
    if (a === null) return;
    await mkdir(dirname(a), { recursive: true });
    const tmp = `${a}.svc-new.tmp`;
    await rm(tmp, { force: true });
    await link(stagedFile, tmp).catch(async (e: unknown) => {
      // another filesystem, or links refused: a copy costs the bytes once more
      if (!['EXDEV', 'EPERM', 'EMLINK'].includes((e as NodeJS.ErrnoException).code ?? '')) throw e;
      await copyFile(stagedFile, tmp);
    });
    await fsyncFile(tmp);
    await rename(tmp, `${a}.svc-new`);
    await fsyncDir(dirname(a));
  }

  /**
   * activate: the previous archive kept exactly once (a retried activation must not overwrite
   * it), then the new one renamed over A. With no staged archive A is removed instead: no
   * archive is better than one of another version than the live image.
   */
  private async swapArchive(member: MemberSpec): Promise<void> {
    const a = this.archiveOf(member);
    if (a === null) return;
    await mkdir(dirname(a), { recursive: true });
    if (!(await exists(`${a}.svc-prev`)) && !(await exists(`${a}.svc-none`))) {
      if (await exists(a)) await link(a, `${a}.svc-prev`);
      else await (await open(`${a}.svc-none`, 'w')).close();
      await fsyncDir(dirname(a));
    }
    if (!(await exists(`${a}.svc-new`))) {
      await rm(a, { force: true });
      await fsyncDir(dirname(a));
      return;
    }
    await rm(`${a}.svc-tmp`, { force: true });
    await link(`${a}.svc-new`, `${a}.svc-tmp`);
    crashPoint('mid-driver-write');
    await rename(`${a}.svc-tmp`, a);
    await fsyncDir(dirname(a));
  }

  /** rollback: the kept previous archive back at A (or none, as before); idempotent. */
  private async restoreArchive(member: MemberSpec): Promise<void> {
    const a = this.archiveOf(member);
    if (a === null) return;
    if (await exists(`${a}.svc-prev`)) {
      await rename(`${a}.svc-prev`, a);
      // rename(2) does nothing when both names are links to one file (killed before the swap)
      await rm(`${a}.svc-prev`, { force: true });
    } else if (await exists(`${a}.svc-none`)) {
      await rm(a, { force: true });
      await rm(`${a}.svc-none`, { force: true });
    } else {
      return; // never activated, or already restored
    }
    await rm(`${a}.svc-tmp`, { force: true });
    await fsyncDir(dirname(a));
  }

  private async exists(container: string): Promise<boolean> {
    return (await this.run(this.cli.exists(container), false)).code === 0;
  }

  private async run(argv: string[], check = true): Promise<RunResult> {
    const r = await runCommand(argv, { timeoutMs: this.timeoutMs, ...(this.env ? { env: this.env } : {}) });
    if (check && r.code !== 0) {
      throw new AgentError('ACTIVATION_FAILED', `${argv.slice(0, 2).join(' ')} exited ${r.code}: ${r.stderr.trim().slice(0, 200)}`, {
        field: argv[1] ?? 'runtime',
      });
    }
    return r;
  }
}
