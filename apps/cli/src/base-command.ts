import { Command } from '@oclif/core';
import type { CommandError } from '@oclif/core/interfaces';
import { outcomeOf } from './outcome.js';

/**
 * Every svc-release command extends this. It replaces oclif's error handling, which
 * prints multi-line messages and sometimes stacks and exits 2 for everything, with the
 * contract of contracts §5: exit 0 verified, 1 refused, 2 usage, and exactly one
 * stderr line saying why.
 */
export abstract class BaseCommand extends Command {
  protected override async catch(err: CommandError): Promise<void> {
    // A parse failure leaves `parsed` false, and oclif would then add a second stderr
    // line ("did not parse its arguments") outside production.
    this.parsed = true;
    const { exit, line } = outcomeOf(err, this.id);
    if (line !== undefined) process.stderr.write(`${line}\n`);
    // exitCode rather than process.exit(): stdout already written is flushed first.
    process.exitCode = exit;
  }

  /** One line to stdout. */
  protected out(line: string): void {
    process.stdout.write(`${line}\n`);
  }

  /** One JSON object to stdout, one line, for scripts. */
  protected outJson(value: Record<string, unknown>): void {
    process.stdout.write(`${JSON.stringify(value)}\n`);
  }
}
