import { flush, run } from '@oclif/core';
import { outcomeOf } from './outcome.js';

/**
 * Runs svc-release. Errors that never reach a command (unknown command, broken
 * installation) get the same one-line, fixed-exit-status treatment as the commands'
 * own errors (BaseCommand.catch): oclif's handler would print a multi-line block.
 */
export async function main(argv: string[], root: string | URL): Promise<void> {
  // `svc-release sign ... | head` closes stdout early: that reader wanted no more, which
  // is not a crash worth a stack trace (Node would otherwise throw EPIPE from a write).
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw err;
  });
  try {
    await run(argv, root instanceof URL ? root.href : root);
    await flush();
  } catch (err) {
    const { exit, line } = outcomeOf(err);
    if (line !== undefined) process.stderr.write(`${line}\n`);
    process.exitCode = exit;
  }
}
