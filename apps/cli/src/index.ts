export { main } from './main.js';
export { EXIT, CLI_ERROR_CODES, CliError } from './errors.js';
export type { ExitCode, CliErrorCode } from './errors.js';
export { outcomeOf, oneLine } from './outcome.js';
export type { Outcome } from './outcome.js';
export { parseTimestamp } from './time.js';
