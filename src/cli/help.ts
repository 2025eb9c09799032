/** `--help` texts: the whole tool's, and one command's. */
import type { OptionSpecs } from './args.js';
import type { CommandDef } from './context.js';

/** Options every command takes; the API ones matter only to commands that call it. */
export const GLOBAL_OPTIONS: OptionSpecs = {
  url: { type: 'string' },
  key: { type: 'string' },
  json: { type: 'boolean' },
  progress: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};

export const DEFAULT_URL = 'http://127.0.0.1:8787';

const GLOBAL_HELP = `Options:
  --url URL     the API's base URL (LEASEHOLD_URL; default ${DEFAULT_URL})
  --key SECRET  the credential sent as a bearer token (LEASEHOLD_KEY)
  --json        print the API's JSON (one document) instead of a table
  --progress    show progress of long operations on stderr even when it is not a terminal
  -h, --help    show help

Exit codes: 0 ok; 1 the API refused (status, type and message on stderr) or the operation
failed; 2 bad usage; 3 the server could not be reached.
`;

export function toolHelp(commands: readonly CommandDef[]): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  const lines = commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`);
  return `leasehold — the Leasehold work queue from the command line

Usage: leasehold <command> [arguments] [options]

Commands:
${lines.join('\n')}

${GLOBAL_HELP}
Run \`leasehold <command> --help\` for a command's arguments and the key it needs.
`;
}

export function commandHelp(c: CommandDef): string {
  const usage = `leasehold ${c.name}${c.usage ? ` ${c.usage}` : ''}`;
  return `Usage: ${usage}

${c.summary}.${c.details ? `\n${c.details}` : ''}

${GLOBAL_HELP}`;
}
