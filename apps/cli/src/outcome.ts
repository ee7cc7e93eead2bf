import { CliError, EXIT, type ExitCode } from './errors.js';

/** What a failed command turns into: an exit status and at most one stderr line. */
export interface Outcome {
  exit: ExitCode;
  /** One line without a trailing newline; `undefined` prints nothing. */
  line: string | undefined;
}

// oclif colours some messages; a line for scripts carries no escape codes.
// eslint-disable-next-line no-control-regex -- ANSI colour sequences start with ESC
const ANSI = /\u001b\[[0-9;]*m/g;
// oclif appends these lines to usage errors; the one-line form says it once itself.
const OCLIF_NOISE = [
  /^see more help with --help$/i,
  /^the following errors? occurred:?$/i,
  // advice about greedy multi-value flags; ours are non-greedy, so it would mislead
  /^note: --\S+ allows multiple values/i,
  /^alternatively, you can use "--"/i,
];

/** Collapses any message to one line: contracts §5 promises scripts one stderr line. */
export function oneLine(message: string): string {
  return message
    .replace(ANSI, '')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !OCLIF_NOISE.some((re) => re.test(l)))
    .join('; ')
    .replace(/\s+/g, ' ');
}

interface ReleaseErrorLike {
  name: 'ReleaseError';
  code: string;
  message: string;
  issues?: readonly { path: string; message: string }[];
}

// Duck-typed rather than instanceof: release-core is imported lazily (startup time),
// and a duplicate copy of the package in node_modules must not turn refusals into crashes.
function isReleaseErrorLike(e: unknown): e is ReleaseErrorLike {
  return e instanceof Error && e.name === 'ReleaseError' && typeof (e as { code?: unknown }).code === 'string';
}

/**
 * The one line of a refusal. A document with bad fields lists every issue (all at
 * once), whatever subset release-core's message already quotes, so an operator fixes the
 * payload in one pass.
 */
function refusalLine(err: ReleaseErrorLike): string {
  const issues = err.issues ?? [];
  if (issues.length === 0) return `refused: ${err.code}: ${err.message}`;
  // release-core messages read "<what>: <first issue> (and N more)": keep only "<what>".
  const head = err.message.split(': ')[0] ?? err.message;
  const n = issues.length === 1 ? '1 issue' : `${issues.length} issues`;
  return `refused: ${err.code}: ${head}, ${n}: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`;
}

interface OclifErrorLike {
  message: string;
  oclif: { exit?: number };
  code?: string;
}

function isOclifError(e: unknown): e is OclifErrorLike {
  return e instanceof Error && typeof (e as { oclif?: unknown }).oclif === 'object' && (e as { oclif?: unknown }).oclif !== null;
}

/**
 * Maps any thrown value to the exit status of contracts §5 and one line for stderr.
 * Never includes a stack trace: the reader is an operator or a script, not us.
 */
export function outcomeOf(err: unknown, command?: string): Outcome {
  const help = command === undefined ? 'svc-release --help' : `svc-release ${command} --help`;
  if (isReleaseErrorLike(err)) {
    return { exit: EXIT.REFUSED, line: oneLine(refusalLine(err)) };
  }
  if (err instanceof CliError) {
    const prefix = err.exitCode === EXIT.USAGE ? 'usage' : 'refused';
    const tail = err.exitCode === EXIT.USAGE ? ` (see ${help})` : '';
    return { exit: err.exitCode, line: oneLine(`${prefix}: ${err.code}: ${err.message}`) + tail };
  }
  if (isOclifError(err)) {
    // oclif's ExitError: a deliberate exit (this.exit(n)) that has nothing more to say.
    if (err.code === 'EEXIT') {
      const n = err.oclif.exit;
      return { exit: n === 0 || n === 1 || n === 2 ? n : EXIT.REFUSED, line: undefined };
    }
    // Everything else oclif raises is about the command line itself: unknown flag,
    // missing argument or flag, unknown command.
    return { exit: EXIT.USAGE, line: `usage: USAGE: ${oneLine(err.message)} (see ${help})` };
  }
  const message = err instanceof Error ? err.message : String(err);
  return { exit: EXIT.REFUSED, line: `error: ${oneLine(message)}` };
}
