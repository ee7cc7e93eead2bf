import { createHash } from 'node:crypto';
import { AgentError } from '../errors.js';
import { runCommand } from './run.js';
import type { BundleInfo, SlotDriver, SlotStatus } from './slot.js';

/** How a streamed install ended: streamed, or the full bundle after the stream failed. */
export interface StreamedInstall {
  method: 'adaptive' | 'full';
  /** RAUC's error for the stream, when it fell back. */
  streamError?: string;
}

export interface RaucOptions {
  /** Environment for the rauc CLI (DBUS_SYSTEM_BUS_ADDRESS in tests). */
  env?: NodeJS.ProcessEnv;
  /** Passed to `rauc info` so it verifies against the same keyring as the service. */
  conf?: string;
  keyring?: string;
  /** Reboot argv; default `systemctl reboot`. */
  rebootCommand?: readonly string[];
  binary?: string;
  timeoutMs?: number;
}

/**
 * RAUC through its CLI: `rauc install`, `rauc status --output-format=json`,
 * `rauc status mark-good|mark-bad|mark-active`. The CLI talks to the `rauc service` over the
 * D-Bus system bus, as on a real device. Needs root (loop mounts, slot devices).
 */
export class RaucSlotDriver implements SlotDriver {
  private readonly opts: RaucOptions;
  private readonly bin: string;

  constructor(opts: RaucOptions = {}) {
    this.opts = opts;
    this.bin = opts.binary ?? 'rauc';
  }

  async status(): Promise<SlotStatus> {
    const out = await this.rauc(['status', '--output-format=json'], 'status');
    let doc: { compatible?: unknown; booted?: unknown; boot_primary?: unknown; slots?: unknown };
    try {
      doc = JSON.parse(out) as typeof doc;
    } catch (cause) {
      throw new AgentError('ACTIVATION_FAILED', 'rauc status printed no JSON', { cause, field: 'rauc status' });
    }
    const slots = Array.isArray(doc.slots) ? (doc.slots as Record<string, { bootname?: string }>[]) : [];
    // boot_primary is a slot name (rootfs.1); the receipt speaks in bootnames (B).
    const primaryName = typeof doc.boot_primary === 'string' ? doc.boot_primary : '';
    let primary = '';
    for (const entry of slots) {
      const info = entry[primaryName];
      if (info?.bootname) primary = info.bootname;
    }
    if (typeof doc.compatible !== 'string' || typeof doc.booted !== 'string' || primary === '') {
      throw new AgentError('ACTIVATION_FAILED', 'rauc status lacks compatible, booted or boot_primary', { field: 'rauc status' });
    }
    return { compatible: doc.compatible, booted: doc.booted, primary };
  }

  async inspect(bundle: string): Promise<BundleInfo> {
    const args = ['info', '--output-format=json', ...this.trustArgs(), bundle];
    const info = JSON.parse(await this.rauc(args, 'info')) as { compatible?: unknown; version?: unknown };
    // The manifest as RAUC read it: the bundle is squashfs with the CMS signature appended,
    // and `rauc info` above has just verified that signature.
    const manifest = await runCommand(['unsquashfs', '-cat', bundle, 'manifest.raucm'], { timeoutMs: 30_000 });
    if (manifest.code !== 0 || typeof info.compatible !== 'string' || typeof info.version !== 'string') {
      throw new AgentError('STAGE_FAILED', `cannot inspect bundle ${bundle}: ${manifest.stderr.trim().slice(0, 200)}`, { field: 'os-bundle' });
    }
    const manifestHash = createHash('sha256').update(manifest.stdout, 'utf8').digest('hex');
    return { compatible: info.compatible, version: info.version, manifestHash };
  }

  async install(bundle: string): Promise<void> {
    await this.rauc(['install', bundle], 'install');
  }

  /**
   * Installs by streaming `url` (the server's bundle port, docs/delta-updates.md "OS bundles:
   * RAUC streaming"): `rauc install https://...`. RAUC's service fetches the bundle itself,
   * authenticating with the `[streaming] tls-cert / tls-key / tls-ca` of its system.conf (the
   * agent's identity files), and with a manifest that names `adaptive=block-hash-index` reads
   * only the blocks its slots do not already hold. Anything that stops the stream (a RAUC built
   * without streaming, no nbd or device-mapper in the kernel, TLS, a plain bundle, a network
   * failure) ends in `fullBundle()`: the full download, verified against the signed digest by
   * the caller, installed from the local file. The result names the path taken and, when the
   * stream failed, RAUC's own last error line.
   */
  async installStreaming(url: string, fullBundle: () => Promise<string>): Promise<StreamedInstall> {
    try {
      await this.rauc(['install', url], 'install');
      return { method: 'adaptive' };
    } catch (e) {
      const streamError = e instanceof Error ? e.message : String(e);
      await this.install(await fullBundle());
      return { method: 'full', streamError };
    }
  }

  async markGood(): Promise<void> {
    await this.rauc(['status', 'mark-good', 'booted'], 'mark-good');
  }

  async markBad(which: 'booted' | 'other'): Promise<void> {
    await this.rauc(['status', 'mark-bad', which], 'mark-bad');
    // With most bootloader backends mark-bad leaves the primary alone; fall back explicitly.
    await this.rauc(['status', 'mark-active', which === 'booted' ? 'other' : 'booted'], 'mark-active');
  }

  async reboot(): Promise<void> {
    const argv = this.opts.rebootCommand ?? ['systemctl', 'reboot'];
    const r = await runCommand(argv, { timeoutMs: 60_000, ...(this.opts.env ? { env: this.opts.env } : {}) });
    if (r.code !== 0) throw new AgentError('ACTIVATION_FAILED', `reboot (${argv.join(' ')}) exited ${r.code}`, { field: 'reboot' });
  }

  private trustArgs(): string[] {
    if (this.opts.keyring) return [`--keyring=${this.opts.keyring}`];
    if (this.opts.conf) return [`--conf=${this.opts.conf}`];
    return [];
  }

  private async rauc(args: string[], what: string): Promise<string> {
    const r = await runCommand([this.bin, ...args], {
      timeoutMs: this.opts.timeoutMs ?? 600_000,
      ...(this.opts.env ? { env: this.opts.env } : {}),
    });
    if (r.code !== 0) {
      // `rauc install` prints `LastError: <why>` last; other commands print an error line
      const lines = (r.stderr + r.stdout).trim().split('\n');
      const last = lines.find((l) => l.startsWith('LastError: ')) ?? lines.filter((l) => /error|fail|mismatch/i.test(l)).pop() ?? r.stderr.trim();
      throw new AgentError(what === 'install' ? 'ACTIVATION_FAILED' : 'ACTIVATION_FAILED', `rauc ${what} failed: ${last.slice(0, 300)}`, {
        field: `rauc ${what}`,
      });
    }
    return r.stdout;
  }
}
