// Sums a V8 .cpuprofile (node --cpu-prof) by function over a time window: self time (samples
// whose top frame is the function) and total time (samples with the function anywhere on the
// stack), with their share of the window. Used with the device-channel bench, which prints each
// timed phase's window in the profile's clock when BENCH_SERVER_FLAGS has --cpu-prof
// (docs/device-channel.md "Benchmark"):
//   node bench/cpuprofile.mjs /tmp/enroll-prof/CPU.<...>.cpuprofile [fromUs toUs] [top]
import { readFileSync } from 'node:fs';

const [file, from, to, topArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: node bench/cpuprofile.mjs FILE.cpuprofile [fromUs toUs] [top]');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8'));
const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const name = (n) => `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.split('/').slice(-2).join('/')}:${n.callFrame.lineNumber + 1}`;
const lo = from ? Number(from) : -Infinity;
const hi = to ? Number(to) : Infinity;
const self = new Map();
const total = new Map();
let windowUs = 0;
let t = profile.startTime;
for (let i = 0; i < profile.samples.length; i++) {
  t += profile.timeDeltas[i];
  if (t < lo || t > hi) continue;
  // a sample stands for the time until the next one
  const dt = profile.timeDeltas[i + 1] ?? 0;
  windowUs += dt;
  const top = nodes.get(profile.samples[i]);
  self.set(name(top), (self.get(name(top)) ?? 0) + dt);
  const seen = new Set();
  for (let id = top.id; id !== undefined; id = parent.get(id)) {
    const k = name(nodes.get(id));
    if (seen.has(k)) continue;
    seen.add(k);
    total.set(k, (total.get(k) ?? 0) + dt);
  }
}
const top = Number(topArg ?? 40);
const table = (m) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([k, us]) => `${(us / 1000).toFixed(0).padStart(8)} ms ${((100 * us) / windowUs).toFixed(1).padStart(5)}%  ${k}`)
    .join('\n');
console.log(`window ${(windowUs / 1000).toFixed(0)} ms`);
console.log(`--- self\n${table(self)}`);
console.log(`--- total\n${table(total)}`);
