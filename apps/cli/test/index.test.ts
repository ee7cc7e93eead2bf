import { describe, expect, it } from 'vitest';
import * as cli from '../src/index.js';

// the public surface is a deliberate list; adding to it is a reviewed change.
describe('@svc/cli public exports', () => {
  it('are exactly these', () => {
    expect(Object.keys(cli).sort()).toEqual(['CLI_ERROR_CODES', 'CliError', 'EXIT', 'main', 'oneLine', 'outcomeOf', 'parseTimestamp']);
  });

  it('pins the exit statuses of contracts 5', () => {
    expect(cli.EXIT).toEqual({ OK: 0, REFUSED: 1, USAGE: 2 });
  });
});
