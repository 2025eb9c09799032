/**
 * `work list|get|stop`: one environment's work items. `list` takes the environment key (as the
 * API: a worker's view); `get` an API key; `stop` either.
 */

import type { WireWork } from '../../api/wire.js';
import { expectPositionals, integer, text } from '../args.js';
import { seg } from '../client.js';
import type { Command, CommandDef } from '../context.js';
import { formatRecord, formatTable } from '../table.js';

const workPath = (env: string, id?: string) =>
  `/v1/environments/${seg(env)}/work${id === undefined ? '' : `/${seg(id)}`}`;

export const workCommands: CommandDef[] = [
  {
    name: 'work list',
    usage: '<environment_id> [--limit n] [--page cursor]',
    summary: 'list an environment’s work items, newest first',
    details: 'Environment key (of that environment).',
    options: { limit: { type: 'string' }, page: { type: 'string' } },
    async run(cmd: Command) {
      const [env] = expectPositionals(cmd.positionals, ['environment_id']);
      const page = (await cmd.client.get(workPath(env!), {
        limit: integer(cmd.values, 'limit', 20, 1, 100),
        page: text(cmd.values, 'page'),
      })) as { data: WireWork[]; next_page: string | null };
      if (cmd.json) return cmd.out.json(page);
      cmd.out.text(
        formatTable(
          ['ID', 'FOR', 'STATE', 'CREATED', 'LAST HEARTBEAT'],
          page.data.map((w) => [
            w.id,
            `${w.data.type} ${w.data.id}`,
            w.state,
            w.created_at,
            w.latest_heartbeat_at,
          ]),
        ),
      );
      if (page.next_page) cmd.out.note(`more: --page ${page.next_page}`);
    },
  },
  {
    name: 'work get',
    usage: '<environment_id> <work_id>',
    summary: 'show one work item',
    details: 'API key (admin or platform).',
    async run(cmd: Command) {
      const [env, id] = expectPositionals(cmd.positionals, ['environment_id', 'work_id']);
      const w = (await cmd.client.get(workPath(env!, id!))) as WireWork;
      if (cmd.json) return cmd.out.json(w);
      cmd.out.text(
        formatRecord([
          ['id', w.id],
          ['environment', w.environment_id],
          // `session sess_…`, or `healthcheck hc_…` for a healthcheck.
          [w.data.type, w.data.id],
          ['state', w.state],
          ['created', w.created_at],
          ['acknowledged', w.acknowledged_at],
          ['started', w.started_at],
          ['last heartbeat', w.latest_heartbeat_at],
          ['stop requested', w.stop_requested_at],
          ['stopped', w.stopped_at],
          ...Object.entries(w.metadata).map(([k, v]) => [`metadata.${k}`, v] as const),
        ]),
      );
    },
  },
  {
    name: 'work stop',
    usage: '<environment_id> <work_id> [--force]',
    summary: 'stop a work item: gracefully, or at once with --force',
    details: 'Environment key or API key. 409 when the item is already past it.',
    options: { force: { type: 'boolean' } },
    async run(cmd: Command) {
      const [env, id] = expectPositionals(cmd.positionals, ['environment_id', 'work_id']);
      const force = cmd.values.force === true;
      const w = (await cmd.client.post(`${workPath(env!, id!)}/stop`, { force })) as WireWork;
      if (cmd.json) return cmd.out.json(w);
      cmd.out.text(`${w.id} ${w.state}\n`);
    },
  },
];
