// The device side of bench/delta.mjs in a process of its own: delivers one member through a
// delta already on disk with the agent's deliverMember and prints its time and this process's
// peak RSS as JSON.
import { copyFile, readFile } from 'node:fs/promises';
import { deliverMember } from '../dist/staging/delta.js';

const job = JSON.parse(process.argv[2]);
const fetcher = {
  fetchTarget: () => Promise.reject(new Error('the full member is not downloaded in this bench')),
  fetchDelta: async (_pair, dest) => {
    await copyFile(job.delta, dest);
    return { length: job.deltaBytes };
  },
};
const t0 = process.hrtime.bigint();
const delivery = await deliverMember(job.member, { fetcher, dir: job.dir, source: job.source, zstd: job.zstd });
const deliverMs = Number(process.hrtime.bigint() - t0) / 1e6;
// VmHWM: this process image's own peak (getrusage's maxRSS also counts the parent's pages at fork)
const hwm = /^VmHWM:\s+(\d+) kB$/m.exec(await readFile('/proc/self/status', 'utf8'));
console.log(JSON.stringify({ deliverMs, agentRss: hwm ? Number(hwm[1]) * 1024 : process.resourceUsage().maxRSS * 1024, delivery }));
