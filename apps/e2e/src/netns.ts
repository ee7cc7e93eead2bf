import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { E2eError } from './errors.js';
import { IP } from './proc.js';

/** Every name this module gives a namespace, bridge or veth starts with it, then the owning process id. */
const PREFIX = 'svch';

function ip(args: string[], opts: { allowFail?: boolean } = {}): string {
  const r = spawnSync(IP, args, { encoding: 'utf8' });
  if (r.status !== 0 && opts.allowFail !== true) {
    throw new E2eError('PROCESS_EXITED', `ip ${args.join(' ')}: exit ${r.status ?? r.signal}: ${(r.stderr || r.error?.message || '').trim()}`);
  }
  return r.stdout;
}

/**
 * Whether this process may make network namespaces (root, or CAP_NET_ADMIN with iproute2
 * installed): the reason when not, for the caller's skip message. Tried for real: a namespace
 * is made and removed.
 */
export function netnsUnavailable(): string | undefined {
  if (!existsSync(IP)) return `${IP} not found (Debian package iproute2)`;
  const probe = `${PREFIX}${process.pid}-probe`;
  const add = spawnSync(IP, ['netns', 'add', probe], { encoding: 'utf8' });
  if (add.status !== 0) return `ip netns add: ${(add.stderr || add.error?.message || `exit ${add.status}`).trim()}`;
  spawnSync(IP, ['netns', 'del', probe]);
  return undefined;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes the namespaces and links a run that was killed left behind: those whose owning
 * process is gone, and this process's own (a previous network of this process not destroyed),
 * after killing the processes still running in those namespaces.
 * Deleting a namespace deletes the veth end inside it, and with it the peer outside.
 */
export function removeStaleNetworks(): string[] {
  const stale = (name: string): boolean => {
    const m = new RegExp(`^${PREFIX}(\\d+)`).exec(name);
    if (m === null) return false;
    const pid = Number(m[1]);
    return pid === process.pid || !alive(pid);
  };
  const removed: string[] = [];
  for (const line of ip(['netns', 'list']).split('\n')) {
    const name = line.split(' ')[0] ?? '';
    if (stale(name)) {
      // processes a killed run left in it (servers, simulators) would keep the namespace alive
      for (const pid of ip(['netns', 'pids', name], { allowFail: true })
        .split('\n')
        .filter((l) => /^\d+$/.test(l))) {
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch {
          // gone meanwhile
        }
      }
      ip(['netns', 'del', name], { allowFail: true });
      removed.push(name);
    }
  }
  for (const line of ip(['-o', 'link', 'show']).split('\n')) {
    // `12: svch123br: <...>` or `13: svch123a@if2: <...>`
    const name = /^\d+:\s+([^:@\s]+)/.exec(line)?.[1] ?? '';
    if (stale(name)) {
      ip(['link', 'del', name], { allowFail: true });
      removed.push(name);
    }
  }
  return removed;
}

/** One namespace on the network: a host of its own. */
export interface NetHost {
  /** The namespace's name (`ip netns exec <ns>`). */
  ns: string;
  /** Its address on the network. */
  addr: string;
}

export interface HostNetwork {
  /** The root namespace's address on the network: where its services (PostgreSQL, HAProxy) are reached. */
  gateway: string;
  hosts: Record<string, NetHost>;
  /** Deletes the namespaces (and their veths) and the bridge; safe to call twice. */
  destroy(): void;
}

/** A /24 in 10.231.0.0/16 that no interface of this machine has an address in yet. */
function freeSubnet(): string {
  const used = ip(['-o', '-4', 'addr', 'show']);
  for (let k = 0; k < 256; k++) {
    const third = (process.pid + k) % 256;
    const prefix = `10.231.${third}.`;
    if (!used.includes(` ${prefix}`)) return prefix;
  }
  throw new E2eError('MALFORMED', 'no free /24 in 10.231.0.0/16 for the test network');
}

/**
 * A network of namespaces, one per name in `hosts` (single lowercase letters or short names),
 * each joined by a veth pair to one bridge in the root namespace: the namespaces reach each
 * other and the root namespace (at `gateway`, the default route), as hosts on one LAN do.
 * Names carry this process's id, so a network a killed run left behind is found and removed
 * by the next (`removeStaleNetworks`, called first).
 */
export function createHostNetwork(hosts: string[]): HostNetwork {
  removeStaleNetworks();
  const tag = `${PREFIX}${process.pid}`;
  const bridge = `${tag}br`;
  for (const h of hosts) {
    // interface names are at most 15 bytes: svch + pid (<= 7 digits) + name + 'n'
    if (!/^[a-z]{1,2}$/.test(h)) throw new E2eError('MALFORMED', `host name ${JSON.stringify(h)}: one or two lowercase letters`);
  }
  const subnet = freeSubnet();
  const gateway = `${subnet}1`;
  const made: NetHost[] = [];
  const destroy = () => {
    for (const h of made) ip(['netns', 'del', h.ns], { allowFail: true });
    ip(['link', 'del', bridge], { allowFail: true });
  };
  try {
    ip(['link', 'add', bridge, 'type', 'bridge']);
    ip(['addr', 'add', `${gateway}/24`, 'dev', bridge]);
    ip(['link', 'set', bridge, 'up']);
    hosts.forEach((h, i) => {
      const ns = `${tag}-${h}`;
      const outer = `${tag}${h}`;
      const inner = `${tag}${h}n`;
      const addr = `${subnet}${11 + i}`;
      ip(['netns', 'add', ns]);
      made.push({ ns, addr });
      ip(['link', 'add', outer, 'type', 'veth', 'peer', 'name', inner]);
      ip(['link', 'set', inner, 'netns', ns]);
      ip(['link', 'set', outer, 'master', bridge]);
      ip(['link', 'set', outer, 'up']);
      ip(['-n', ns, 'link', 'set', inner, 'name', 'eth0']);
      ip(['-n', ns, 'addr', 'add', `${addr}/24`, 'dev', 'eth0']);
      ip(['-n', ns, 'link', 'set', 'eth0', 'up']);
      ip(['-n', ns, 'link', 'set', 'lo', 'up']);
      ip(['-n', ns, 'route', 'add', 'default', 'via', gateway]);
    });
  } catch (e) {
    destroy();
    throw e;
  }
  return { gateway, hosts: Object.fromEntries(hosts.map((h, i) => [h, made[i]!])), destroy };
}
