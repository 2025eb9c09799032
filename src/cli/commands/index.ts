/** Every command, in the order `--help` lists them. */
import type { CommandDef } from '../context.js';
import { envCommands } from './env.js';
import { journalCommands } from './journal.js';
import { keyCommands } from './keys.js';
import { platformCommands } from './platform.js';
import { serverCommands } from './server.js';
import { statsCommands } from './stats.js';
import { workCommands } from './work.js';

export const COMMANDS: readonly CommandDef[] = [
  ...serverCommands,
  ...envCommands,
  ...keyCommands,
  ...platformCommands,
  ...statsCommands,
  ...workCommands,
  ...journalCommands,
];
