/**
 * What a command gets: its parsed arguments, the API client, and the output. Everything the
 * process owns (the environment, streams, fetch, the clock, the server, the database) comes in
 * through `CliDeps`, so the CLI runs the same under tests as under `functions/cli.ts`.
 */

import type { Values } from './args.js';
import type { Client } from './client.js';

export interface Writer {
  write(text: string): void;
  /** True when a person is watching (progress is shown then). */
  isTTY?: boolean;
}

export interface CliDeps {
  env: Record<string, string | undefined>;
  stdout: Writer;
  stderr: Writer;
  fetch: typeof fetch;
  /** Resolves after `ms`, or early (without throwing) when `signal` aborts. */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
  /**
   * Aborted on Ctrl-C, for a command that ends cleanly on it (`stats --watch`). Ctrl-C is
   * caught only from the first call on; before it, it ends the process as usual.
   */
  interrupt(): AbortSignal;
  /** Runs the Node server until it stops (`serve`). */
  serve(): Promise<void>;
  /** Runs the brain until it stops (`brain`). */
  brain(): Promise<void>;
  /** Applies the migrations to a PostgreSQL database (`migrate`). */
  migrate(databaseUrl: string): Promise<void>;
  /** Creates or checks the journal stream (`journal provision`). */
  provisionJournal(natsUrl: string, replicas: number): Promise<{ created: boolean }>;
}

export interface Command {
  deps: CliDeps;
  values: Values;
  positionals: string[];
  json: boolean;
  /** The API client; throws a usage error on first use when no key was given. */
  client: Client;
  out: Output;
}

export class Output {
  constructor(
    private readonly deps: CliDeps,
    private readonly progressOn: boolean,
  ) {}

  /** Text for people (stdout). */
  text(text: string): void {
    this.deps.stdout.write(text);
  }

  /** One JSON document (stdout), for scripts. */
  json(value: unknown): void {
    this.deps.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
  }

  /** One JSON document per line, for streams of samples (`stats --watch --json`). */
  jsonLine(value: unknown): void {
    this.deps.stdout.write(`${JSON.stringify(value)}\n`);
  }

  /** Progress of a long operation (stderr), only when someone sees it or it was asked for. */
  progress(text: string): void {
    if (this.progressOn) this.deps.stderr.write(`${text}\n`);
  }

  /** A note for people that must not pollute stdout (stderr), e.g. the next page's cursor. */
  note(text: string): void {
    this.deps.stderr.write(`${text}\n`);
  }
}

/** One command (`env create`, `stats`…): its help and what it does. */
export interface CommandDef {
  name: string;
  /** Arguments and command options, as shown after the name in help. */
  usage: string;
  summary: string;
  /** Which credential it needs, and anything else worth a line in `--help`. */
  details?: string;
  options?: import('./args.js').OptionSpecs;
  /** False for commands that never call the API (serve, brain, migrate, journal provision). */
  usesApi?: boolean;
  run(cmd: Command): Promise<void>;
}
