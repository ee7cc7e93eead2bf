import { AgentError } from '../errors.js';
import { digestHex, isDigest, type Digest } from '@svc/release-core';
import type { ActivationResult, DriverFacts, MemberDriver, MemberSpec } from './driver.js';
import { containerRuntimeCli, parseLoadedImage, type ContainerRuntimeCli } from './container-runtime.js';
import { runCommand, type RunResult } from './run.js';

export interface ContainerDriverOptions {
  runtime?: ContainerRuntimeCli;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
}

/**
 * Containers through a runtime CLI. The live container is `svc-<component>`; during a
 * transaction the replaced one waits, stopped, as `svc-<component>-prev` until commit.
 * Images are tagged `svc/<component>:<digest hex>` so a retry finds what it staged.
 */
export class ContainerDriver implements MemberDriver {
  readonly kind = 'container' as const;
  private readonly cli: ContainerRuntimeCli;
  private readonly env: NodeJS.ProcessEnv | undefined;
  private readonly timeoutMs: number;

  constructor(opts: ContainerDriverOptions = {}) {
    this.cli = opts.runtime ?? containerRuntimeCli('docker');
    this.env = opts.env;
    this.timeoutMs = opts.timeoutMs ?? 300_000;
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

  async stage(member: MemberSpec, stagedFile: string): Promise<DriverFacts> {
    const r = await this.run(this.cli.load(stagedFile));
    const loaded = parseLoadedImage(r.stdout);
    if (loaded === null) {
      throw new AgentError('STAGE_FAILED', `${this.cli.binary} load of ${member.component} printed no image`, { field: member.component });
    }
    const { image } = ContainerDriver.names(member);
    await this.run(this.cli.tag(loaded, image));
    return { image };
  }

  async activate(member: MemberSpec): Promise<ActivationResult> {
    const { live, prev, image } = ContainerDriver.names(member);
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
  }

  async commit(member: MemberSpec): Promise<void> {
    await this.run(this.cli.remove(ContainerDriver.names(member).prev));
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
