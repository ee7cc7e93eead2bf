#!/usr/bin/env node
// svc-release entry point. The logic lives in dist/main.js (built from src/main.ts);
// this file only hands it the package location so oclif finds dist/commands.
import { main } from '../dist/main.js';

await main(process.argv.slice(2), import.meta.url);
