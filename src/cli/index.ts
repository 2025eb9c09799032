/**
 * The `leasehold` command-line client. Glossary: a *command* is one `CommandDef`
 * (`env create`); a *group* is its first word (`env`); *deps* are what the process owns
 * (streams, environment, fetch, server, database), injected by `functions/cli.ts`.
 */

export type { CliDeps, Writer } from './context.js';
export { EXIT_FAILED, EXIT_OK, EXIT_UNREACHABLE, EXIT_USAGE } from './errors.js';
export { runCli } from './run.js';
