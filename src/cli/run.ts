/**
 * The CLI: finds the command named by the first words of argv (`env create`, `stats`…),
 * parses its options with the global ones, runs it, and turns any failure into one line on
 * stderr and an exit code (`errors.ts`). Returns the exit code; the caller exits with it.
 */
import { parseArgs } from './args.js';
import { Client } from './client.js';
import { COMMANDS } from './commands/index.js';
import { type CliDeps, type CommandDef, Output } from './context.js';
import { describeFailure, EXIT_OK, UsageError } from './errors.js';
import { commandHelp, DEFAULT_URL, GLOBAL_OPTIONS, toolHelp } from './help.js';

export async function runCli(argv: readonly string[], deps: CliDeps): Promise<number> {
  try {
    const found = findCommand(argv);
    if (!found) {
      if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
        deps.stdout.write(toolHelp(COMMANDS));
        return EXIT_OK;
      }
      throw new UsageError(unknownCommand(argv));
    }
    const { command, rest } = found;
    const { values, positionals } = parseArgs(rest, { ...GLOBAL_OPTIONS, ...command.options });
    if (values.help === true) {
      deps.stdout.write(commandHelp(command));
      return EXIT_OK;
    }
    const out = new Output(deps, values.progress === true || deps.stderr.isTTY === true);
    const client = new Client({
      baseUrl: (values.url as string | undefined) ?? deps.env.LEASEHOLD_URL ?? DEFAULT_URL,
      key: (values.key as string | undefined) ?? deps.env.LEASEHOLD_KEY,
      fetch: deps.fetch,
    });
    await command.run({ deps, values, positionals, json: values.json === true, client, out });
    return EXIT_OK;
  } catch (err) {
    const { line, exitCode } = describeFailure(err);
    deps.stderr.write(`${line}\n`);
    return exitCode;
  }
}

/** The longest command name that argv starts with (`api-key create` before a bare `api-key`). */
function findCommand(argv: readonly string[]): { command: CommandDef; rest: string[] } | null {
  for (const words of [2, 1]) {
    const name = argv.slice(0, words).join(' ');
    const command = COMMANDS.find((c) => c.name === name);
    if (command) return { command, rest: argv.slice(words) };
  }
  return null;
}

function unknownCommand(argv: readonly string[]): string {
  const group = argv[0]!;
  const sub = COMMANDS.filter((c) => c.name.startsWith(`${group} `)).map((c) => c.name.split(' ')[1]);
  if (sub.length) {
    const what =
      argv[1] === undefined ? 'needs a subcommand' : `has no subcommand ${JSON.stringify(argv[1])}`;
    return `${group} ${what} (one of ${sub.join(', ')}); see leasehold --help`;
  }
  return `unknown command ${JSON.stringify(group)}; see leasehold --help`;
}
