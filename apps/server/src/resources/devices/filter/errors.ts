import { invalidInput, type ServerError } from '../../../errors/server-error.js';

/**
 * A filter refusal: 400 INVALID_INPUT naming the field and the column (1-based, in UTF-16 code
 * units, as a browser's string indexes count) where the problem starts, e.g.
 * `filter: column 14: expected a value after "="`.
 */
export function filterError(column: number, problem: string, field = 'filter'): ServerError<'INVALID_INPUT'> {
  return invalidInput(field, `column ${column}: ${problem}`);
}
