#!/usr/bin/env node
// The `leasehold` command: registers tsx (a runtime dependency) so the TypeScript entry runs
// as it is, with no build step, then hands over to it.
import { register } from 'tsx/esm/api';

register();
await import(new URL('../functions/cli.ts', import.meta.url).href);
