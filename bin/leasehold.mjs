#!/usr/bin/env node
// The `leasehold` command: runs functions/cli.ts as `npm start` runs the server (a bundle,
// rebuilt when a source changed; see scripts/launch.mjs), with no build step of the user's.
import { fileURLToPath } from 'node:url';
import { runEntry } from '../scripts/launch.mjs';

await runEntry(fileURLToPath(new URL('../functions/cli.ts', import.meta.url)), process.argv.slice(2), {
  quiet: true,
});
