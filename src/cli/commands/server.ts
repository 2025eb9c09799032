/**
 * `serve`, `brain` and `migrate`: the commands that run the server or the brain, or touch the
 * database, not the API.
 */
import { expectPositionals, text } from '../args.js';
import type { Command, CommandDef } from '../context.js';
import { UsageError } from '../errors.js';

export const serverCommands: CommandDef[] = [
  {
    name: 'serve',
    usage: '',
    summary: 'run the Node server (as `npm start`) until SIGTERM or Ctrl-C',
    details:
      'Configured by the environment as `npm start` is: DATABASE_URL, PORT, HOST, ' +
      'LEASEHOLD_ADMIN_KEY, NATS_URL… (see docs/configuration.md).',
    usesApi: false,
    async run(cmd: Command) {
      expectPositionals(cmd.positionals, []);
      await cmd.deps.serve();
    },
  },
  {
    name: 'brain',
    usage: '',
    summary: "run the brain (as `npm run brain`): the sessions' model turns, until SIGTERM or Ctrl-C",
    details:
      'Configured by the environment: DATABASE_URL (the PostgreSQL the servers use), NATS_URL and ' +
      'LEASEHOLD_MODEL are required; LEASEHOLD_BRAIN_SLOTS, LEASEHOLD_MODEL_API_KEY… (see ' +
      'docs/sessions.md). A signal stops it claiming; the turns in hand finish, then it exits 0.',
    usesApi: false,
    async run(cmd: Command) {
      expectPositionals(cmd.positionals, []);
      await cmd.deps.brain();
    },
  },
  {
    name: 'migrate',
    usage: '[--database-url postgres://…]',
    summary: 'apply the database migrations to PostgreSQL',
    details:
      '--database-url defaults to DATABASE_URL. Safe to run while servers run (an advisory lock serializes it).',
    options: { 'database-url': { type: 'string' } },
    usesApi: false,
    async run(cmd: Command) {
      expectPositionals(cmd.positionals, []);
      const url = text(cmd.values, 'database-url') ?? cmd.deps.env.DATABASE_URL;
      if (!url) throw new UsageError('no database: pass --database-url or set DATABASE_URL');
      if (!/^postgres(ql)?:\/\//.test(url))
        throw new UsageError('the database URL must be postgres:// or postgresql://');
      cmd.out.progress('applying migrations…');
      await cmd.deps.migrate(url);
      // The URL may hold a password: it is never echoed.
      if (cmd.json) return cmd.out.json({ migrated: true });
      cmd.out.text('migrations applied\n');
    },
  },
];
