// What every server bench shares about its exit status: a target "NOT MET" is a measurement
// (exit 0); a bench that could not measure (failed calls, a phase without a single sample, a
// server that did not start) names the reason on stderr and exits 1.

/** A figure the bench could not measure; the message says which and why. */
export class NotMeasured extends Error {
  name = 'NotMeasured';
}

/** Throws NotMeasured(`why`) unless `ok`. */
export function measured(ok, why) {
  if (!ok) throw new NotMeasured(why);
}

/** The mean of `samples`; NotMeasured naming `what` when there is none or one is not a finite number. */
export function meanOf(samples, what) {
  if (samples.length === 0) throw new NotMeasured(`${what}: no sample`);
  if (!samples.every(Number.isFinite)) throw new NotMeasured(`${what}: a sample is not a number (${samples.join(', ')})`);
  return samples.reduce((a, b) => a + b, 0) / samples.length;
}

/**
 * Runs `body`; when it throws, `<name> bench: could not measure: <reason>` on stderr and exit
 * status 1 (the stack too, unless the reason is a NotMeasured).
 */
export async function benchMain(name, body) {
  try {
    await body();
  } catch (e) {
    process.stderr.write(`${name} bench: could not measure: ${e instanceof Error ? e.message : String(e)}\n`);
    if (!(e instanceof NotMeasured) && e instanceof Error && e.stack) process.stderr.write(`${e.stack}\n`);
    process.exitCode = 1;
  }
}

/** The node flags each host of a deployment on PostgreSQL adds (docs/server.md, "Deployment on several hosts"). */
export const POSTGRES_NODE_FLAGS = ['--max-semi-space-size=64'];

/**
 * How the server is launched as deployed: the environment and node flags of `pnpm start`
 * (apps/server/package.json, `[NAME=value ...] node [--flag ...] dist/main.js`), plus, on
 * PostgreSQL, the flags a deployment's hosts add. Throws when the start script has another form.
 */
export function serverLaunch(packageJson, driver) {
  const start = JSON.parse(packageJson).scripts.start;
  const m = /^((?:[A-Z_]+=\S+ )*)node((?: --\S+)*) dist\/main\.js$/.exec(start);
  if (m === null) throw new Error(`bench: cannot read the launch from the start script ${JSON.stringify(start)}`);
  const env = Object.fromEntries(
    m[1]
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
  const flags = m[2].trim().split(/\s+/).filter(Boolean);
  return { env, flags: driver === 'postgres' ? [...flags, ...POSTGRES_NODE_FLAGS] : flags };
}
