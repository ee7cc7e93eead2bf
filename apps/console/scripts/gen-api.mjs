#!/usr/bin/env node
// Regenerates src/api/openapi.json and src/api/__generated__/schema.ts from the built server
// (run `pnpm build` first). test/api-generated.test.ts fails until this has been run after an
// API change.
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { DOC_FILE, TYPES_FILE, documentText, serverOpenApi, typesText } from './openapi.mjs';

const doc = await serverOpenApi();
await mkdir(dirname(TYPES_FILE), { recursive: true });
await writeFile(DOC_FILE, documentText(doc));
await writeFile(TYPES_FILE, await typesText(doc));
console.log(`gen:api: ${Object.keys(doc.paths).length} paths -> ${DOC_FILE}, ${TYPES_FILE}`);
