import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DOC_FILE, TYPES_FILE, documentText, serverOpenApi, typesText } from '../scripts/openapi.mjs';

// The console has no hand-written request or response types: they are generated from the
// server's OpenAPI document. A changed API fails here until `pnpm --filter @svc/console gen:api`
// (after `pnpm build`) regenerates both files.
describe('the generated API client is current', () => {
  it('src/api/openapi.json is the document the built server serves', async () => {
    const served = documentText(await serverOpenApi());
    expect(readFileSync(DOC_FILE, 'utf8') === served, 'src/api/openapi.json is stale: run pnpm --filter @svc/console gen:api').toBe(true);
  });

  it('src/api/__generated__/schema.ts is what openapi-typescript makes of that document', async () => {
    const committed = JSON.parse(readFileSync(DOC_FILE, 'utf8')) as unknown;
    const regenerated = await typesText(committed);
    expect(readFileSync(TYPES_FILE, 'utf8') === regenerated, 'src/api/__generated__/schema.ts is stale: run pnpm --filter @svc/console gen:api').toBe(true);
  });
});
