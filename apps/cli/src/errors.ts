/**
 * Errors the CLI itself raises (as opposed to the ReleaseError refusals of
 * release-core). Each code maps to exactly one exit status, so a script can rely on
 * `$?` alone: 0 verified, 1 refused, 2 usage.
 */
import { CodedError } from '@svc/release-core';
export const EXIT = {
  /** contracts §5: verified (or, for keygen and sign, done). */
  OK: 0,
  /** contracts §5: refused; the reason is one line on stderr. */
  REFUSED: 1,
  /** contracts §5: usage error (bad flag, missing argument, unreadable input file). */
  USAGE: 2,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

export const CLI_ERROR_CODES = [
  // a flag or argument is missing, unknown or malformed
  'USAGE',
  // an input file named on the command line cannot be read: a usage error, because
  // the operator named the wrong path, not because the document was refused
  'INPUT_UNREADABLE',
  // an input file is larger than the CLI will read
  'INPUT_TOO_LARGE',
  // an input file was read but is not JSON: the document is refused
  'INPUT_NOT_JSON',
  // an output file cannot be written (exists without --force, directory missing, ...)
  'OUTPUT_FAILED',
  // a case evidence archive is not a tar, lacks its signed manifest, or its files do not match it
  'EVIDENCE_INVALID',
  // a root to sign is not TUF root metadata, or not the version after the trusted root
  'ROOT_INVALID',
  // a key given to sign-root is not a root key of the trusted root nor of the root being signed
  'ROOT_KEY_UNKNOWN',
] as const;

export type CliErrorCode = (typeof CLI_ERROR_CODES)[number];

const EXIT_OF: Record<CliErrorCode, ExitCode> = {
  USAGE: EXIT.USAGE,
  INPUT_UNREADABLE: EXIT.USAGE,
  INPUT_TOO_LARGE: EXIT.REFUSED,
  INPUT_NOT_JSON: EXIT.REFUSED,
  OUTPUT_FAILED: EXIT.REFUSED,
  EVIDENCE_INVALID: EXIT.REFUSED,
  ROOT_INVALID: EXIT.REFUSED,
  ROOT_KEY_UNKNOWN: EXIT.REFUSED,
};

export class CliError<C extends CliErrorCode = CliErrorCode> extends CodedError<C> {
  override readonly name = 'CliError';

  get exitCode(): ExitCode {
    return EXIT_OF[this.code];
  }
}
