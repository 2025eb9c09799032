/** `env create|list|archive`: environments, with the admin API key. */
import { expectPositionals, integer, text } from '../args.js';
import { seg } from '../client.js';
import type { Command, CommandDef } from '../context.js';
import { UsageError } from '../errors.js';
import { formatRecord, formatTable } from '../table.js';

interface WireEnvironment {
  id: string;
  name: string;
  description: string | null;
  config: { type: string };
  archived_at: string | null;
  created_at: string;
}
interface Page<T> {
  data: T[];
  next_page: string | null;
}

const ENV_TYPES = ['self_hosted', 'cloud'];

export const envCommands: CommandDef[] = [
  {
    name: 'env create',
    usage: '<name> [--type self_hosted|cloud] [--description text]',
    summary: 'create an environment',
    // The CLI's audience runs workers against the work API, which only self_hosted serves.
    details: 'Admin API key. --type defaults to self_hosted (the kind the work API and its keys serve).',
    options: { type: { type: 'string' }, description: { type: 'string' } },
    async run(cmd: Command) {
      const [name] = expectPositionals(cmd.positionals, ['name']);
      const type = text(cmd.values, 'type') ?? 'self_hosted';
      if (!ENV_TYPES.includes(type)) throw new UsageError(`--type must be one of ${ENV_TYPES.join(', ')}`);
      const body: Record<string, unknown> = { name, config: { type } };
      const description = text(cmd.values, 'description');
      if (description !== undefined) body.description = description;
      const env = (await cmd.client.post('/v1/environments', body)) as WireEnvironment;
      if (cmd.json) return cmd.out.json(env);
      cmd.out.text(showEnvironment(env));
    },
  },
  {
    name: 'env list',
    usage: '[--all] [--limit n] [--page cursor]',
    summary: 'list environments, newest first',
    details: 'Admin API key. --all includes archived ones.',
    options: { all: { type: 'boolean' }, limit: { type: 'string' }, page: { type: 'string' } },
    async run(cmd: Command) {
      expectPositionals(cmd.positionals, []);
      const page = (await cmd.client.get('/v1/environments', {
        include_archived: cmd.values.all === true ? true : undefined,
        limit: integer(cmd.values, 'limit', 20, 1, 100),
        page: text(cmd.values, 'page'),
      })) as Page<WireEnvironment>;
      if (cmd.json) return cmd.out.json(page);
      cmd.out.text(
        formatTable(
          ['ID', 'NAME', 'TYPE', 'CREATED', 'ARCHIVED'],
          page.data.map((e) => [e.id, e.name, e.config.type, e.created_at, e.archived_at]),
        ),
      );
      if (page.next_page) cmd.out.note(`more: --page ${page.next_page}`);
    },
  },
  {
    name: 'env archive',
    usage: '<environment_id>',
    summary: 'archive an environment (its work API keeps serving)',
    details: 'Admin API key.',
    async run(cmd: Command) {
      const [id] = expectPositionals(cmd.positionals, ['environment_id']);
      const env = (await cmd.client.post(`/v1/environments/${seg(id!)}/archive`)) as WireEnvironment;
      if (cmd.json) return cmd.out.json(env);
      cmd.out.text(showEnvironment(env));
    },
  },
];

function showEnvironment(e: WireEnvironment): string {
  return formatRecord([
    ['id', e.id],
    ['name', e.name],
    ['type', e.config.type],
    ['description', e.description],
    ['created', e.created_at],
    ['archived', e.archived_at],
  ]);
}
