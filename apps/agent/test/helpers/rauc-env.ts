import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * A real RAUC A/B system in a temp dir: test CA + signing cert (OpenSSL), two file-backed
 * ext4 slots, a custom bootloader backend script keeping its state in files, a private
 * D-Bus system bus and `rauc service`. "Reboot" = restart the service with
 * --override-boot-slot. Needs root (loop-mounting the bundle). Verity bundles (RAUC's
 * streaming and adaptive format) can be built; installing one needs device-mapper in the
 * kernel, and streaming it nbd and a RAUC built with --enable-streaming.
 */
export interface RaucEnv {
  dir: string;
  conf: string;
  caPem: string;
  env: NodeJS.ProcessEnv;
  /** Builds a plain bundle `<name>.raucb` containing an ext4 rootfs image. */
  bundle(
    name: string,
    opts: { version: string; compatible?: string; signer?: 'test' | 'rogue'; format?: 'plain' | 'verity'; payload?: Buffer },
  ): Promise<string>;
  /** Simulates a reboot: the bootloader boots `slot` (or its own choice: primary unless bad). */
  reboot(slot?: string): Promise<string>;
  booted(): string;
  bootState(): Promise<{ primary: string; A: string; B: string }>;
  close(): Promise<void>;
}

const BOOTLOADER = `#!/bin/sh
# custom bootloader backend for rauc: state in files next to this script
D="$(dirname "$0")/boot"
mkdir -p "$D"
case "$1" in
  get-primary) cat "$D/primary" 2>/dev/null || echo A ;;
  # like barebox: making a slot primary also resets it to good (fresh boot attempts)
  set-primary) echo "$2" > "$D/primary"; echo good > "$D/state.$2" ;;
  get-state) cat "$D/state.$2" 2>/dev/null || echo good ;;
  set-state) echo "$3" > "$D/state.$2" ;;
  get-current) cat "$D/current" 2>/dev/null || echo A ;;
  *) exit 1 ;;
esac
`;

const DBUS_CONF = (sock: string) => `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=${sock}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_type="method_return"/>
    <allow send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="signal"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
  </policy>
</busconfig>
`;

/** `[streaming]` of RAUC's system.conf: the client certificate, key and CA it streams bundles with. */
export interface RaucStreaming {
  tlsCert: string;
  tlsKey: string;
  tlsCa: string;
}

export async function startRaucEnv(o: { streaming?: RaucStreaming } = {}): Promise<RaucEnv> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-rauc-'));
  const sh = (cmd: string, args: string[]) => execFileSync(cmd, args, { cwd: dir, stdio: 'pipe' });
  // signing PKI: a CA (the keyring) and a signer; a rogue self-signed signer for refusals
  sh('openssl', [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '365',
    '-subj',
    '/CN=svc test rauc CA',
    '-addext',
    'basicConstraints=critical,CA:true',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  sh('openssl', ['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'sign.key', '-out', 'sign.csr', '-subj', '/CN=svc test signer']);
  await writeFile(join(dir, 'sign.ext'), 'basicConstraints=CA:false\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n');
  sh('openssl', [
    'x509',
    '-req',
    '-in',
    'sign.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'sign.pem',
    '-days',
    '365',
    '-extfile',
    'sign.ext',
  ]);
  sh('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'rogue.key', '-out', 'rogue.pem', '-days', '365', '-subj', '/CN=rogue signer']);
  for (const s of ['slotA.img', 'slotB.img']) {
    sh('truncate', ['-s', '64M', s]);
    sh('mkfs.ext4', ['-qF', s]);
  }
  await writeFile(join(dir, 'bootloader.sh'), BOOTLOADER);
  await chmod(join(dir, 'bootloader.sh'), 0o755);
  await mkdir(join(dir, 'mnt'));
  await mkdir(join(dir, 'data'));
  const conf = join(dir, 'system.conf');
  await writeFile(
    conf,
    `[system]
compatible=svc-test
bootloader=custom
data-directory=${dir}/data

[handlers]
bootloader-custom-backend=${dir}/bootloader.sh

[keyring]
path=${dir}/ca.pem

${o.streaming ? `[streaming]\ntls-cert=${o.streaming.tlsCert}\ntls-key=${o.streaming.tlsKey}\ntls-ca=${o.streaming.tlsCa}\n\n` : ''}[slot.rootfs.0]
device=${dir}/slotA.img
type=ext4
bootname=A

[slot.rootfs.1]
device=${dir}/slotB.img
type=ext4
bootname=B
`,
  );
  await writeFile(join(dir, 'dbus.conf'), DBUS_CONF(join(dir, 'bus.sock')));
  const out = execFileSync('dbus-daemon', ['--config-file=' + join(dir, 'dbus.conf'), '--fork', '--print-address=1', '--print-pid=1'], { encoding: 'utf8' });
  const [address, pidText] = out.trim().split('\n');
  const dbusPid = Number(pidText);
  const env = { ...process.env, DBUS_SYSTEM_BUS_ADDRESS: address!.trim() };

  let service: ChildProcess | null = null;
  let booted = 'A';
  const startService = async (slot: string) => {
    booted = slot;
    await writeFile(join(dir, 'boot-current'), slot);
    service = spawn('rauc', ['service', `--conf=${conf}`, `--mount=${dir}/mnt`, `--override-boot-slot=${slot}`], { env, stdio: 'ignore' });
    // ready once `rauc status` answers over the bus
    for (let i = 0; i < 100; i++) {
      try {
        execFileSync('rauc', ['status', '--output-format=json'], { env, stdio: 'pipe' });
        return;
      } catch {
        await sleep(50);
      }
    }
    throw new Error('rauc service did not come up');
  };
  const stopService = async () => {
    const s = service;
    if (!s || s.exitCode !== null) return;
    const exited = new Promise((r) => s.once('exit', r));
    s.kill('SIGTERM');
    await exited;
  };
  await startService('A');

  const bootState = async () => {
    const read = async (f: string, d: string) => (await readFile(join(dir, 'boot', f), 'utf8').catch(() => d)).trim();
    return { primary: await read('primary', 'A'), A: await read('state.A', 'good'), B: await read('state.B', 'good') };
  };

  return {
    dir,
    conf,
    caPem: join(dir, 'ca.pem'),
    env,
    async bundle(name, opts) {
      const content = join(dir, `content-${name}`);
      const rootfs = join(dir, `rootfs-${name}`);
      await mkdir(content);
      await mkdir(rootfs);
      await writeFile(join(rootfs, 'version'), opts.version);
      // a verity bundle's squashfs must not compress to a single block: give the image content
      if (opts.format === 'verity' || opts.payload) await writeFile(join(rootfs, 'payload'), opts.payload ?? randomBytes(2 * 1024 * 1024));
      sh('truncate', ['-s', '4M', join(content, 'rootfs.ext4')]);
      sh('mkfs.ext4', ['-qF', '-d', rootfs, join(content, 'rootfs.ext4')]);
      await writeFile(
        join(content, 'manifest.raucm'),
        `[update]\ncompatible=${opts.compatible ?? 'svc-test'}\nversion=${opts.version}\n\n[bundle]\nformat=${opts.format ?? 'plain'}\n\n[image.rootfs]\nfilename=rootfs.ext4\n${opts.format === 'verity' ? 'adaptive=block-hash-index\n' : ''}`,
      );
      const signer = opts.signer ?? 'test';
      const file = join(dir, `${name}.raucb`);
      sh('rauc', ['bundle', `--cert=${signer === 'test' ? 'sign.pem' : 'rogue.pem'}`, `--key=${signer === 'test' ? 'sign.key' : 'rogue.key'}`, content, file]);
      return file;
    },
    async reboot(slot) {
      await stopService();
      const st = await bootState();
      const other = st.primary === 'A' ? 'B' : 'A';
      const next = slot ?? (st[st.primary as 'A' | 'B'] === 'bad' ? other : st.primary);
      await startService(next);
      return next;
    },
    booted: () => booted,
    bootState,
    async close() {
      await stopService();
      try {
        process.kill(dbusPid, 'SIGTERM');
      } catch {
        /* already gone */
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
