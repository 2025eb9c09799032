/**
 * `enqueue` and `session cancel`: the platform lane, with a platform or admin API key.
 * `enqueue --count N` queues N items for the sessions `<session>-1` … `<session>-N`, one
 * request each (enqueue is idempotent per live session and kind, so one session would get
 * one item), reporting progress as it goes.
 */

import { WORK_KINDS } from '../../db/work-enums.js';
import { expectPositionals, integer, text } from '../args.js';
import { seg } from '../client.js';
import type { Command, CommandDef } from '../context.js';
import { UsageError } from '../errors.js';
import { formatTable } from '../table.js';

interface Enqueued {
  created: boolean;
  work: { id: string; environment_id: string; data: { id: string }; kind: string; state: string };
}

/** Progress lines per run at most: enough to see it move, few enough not to flood a log. */
const PROGRESS_STEPS = 20;
const MAX_COUNT = 100_000;

export const platformCommands: CommandDef[] = [
  {
    name: 'enqueue',
    usage: '<environment_id> <session_id> [--kind kind] [--meta key=value]... [--count n]',
    summary: 'queue work for a session (idempotent per live session and kind)',
    details:
      `Platform or admin API key. --kind is one of ${WORK_KINDS.join(', ')} (default tool_exec, ` +
      'the kind the work API hands to workers). --count n queues one item for each of the ' +
      'sessions <session_id>-1 … <session_id>-n.',
    options: {
      kind: { type: 'string' },
      meta: { type: 'string', multiple: true },
      count: { type: 'string' },
    },
    async run(cmd: Command) {
      const [env, session] = expectPositionals(cmd.positionals, ['environment_id', 'session_id']);
      const kind = text(cmd.values, 'kind') ?? 'tool_exec';
      if (!(WORK_KINDS as readonly string[]).includes(kind))
        throw new UsageError(`--kind must be one of ${WORK_KINDS.join(', ')}`);
      const metadata = parseMeta(cmd.values.meta as string[] | undefined);
      const count = integer(cmd.values, 'count', 0, 1, MAX_COUNT);
      const sessions =
        count === 0 ? [session!] : Array.from({ length: count }, (_, i) => `${session}-${i + 1}`);
      const every = Math.max(1, Math.ceil(sessions.length / PROGRESS_STEPS));
      const results: Enqueued[] = [];
      for (const [i, s] of sessions.entries()) {
        const body = { environment_id: env, session_id: s, kind, ...(metadata ? { metadata } : {}) };
        results.push((await cmd.client.post('/v1/platform/work', body)) as Enqueued);
        if (sessions.length > 1 && ((i + 1) % every === 0 || i + 1 === sessions.length)) {
          cmd.out.progress(`enqueued ${i + 1}/${sessions.length}`);
        }
      }
      // One item: the API's answer as it is; several: one document holding every answer.
      if (cmd.json) return cmd.out.json(count === 0 ? results[0] : { data: results });
      cmd.out.text(
        formatTable(
          ['ID', 'SESSION', 'KIND', 'STATE', 'CREATED'],
          results.map((r) => [
            r.work.id,
            r.work.data.id,
            r.work.kind,
            r.work.state,
            r.created ? 'new' : 'existing',
          ]),
        ),
      );
    },
  },
  {
    name: 'session cancel',
    usage: '<session_id>',
    summary: 'stop everything a session has in flight',
    details: 'Platform or admin API key.',
    async run(cmd: Command) {
      const [session] = expectPositionals(cmd.positionals, ['session_id']);
      const result = (await cmd.client.post(`/v1/platform/sessions/${seg(session!)}/cancel`)) as {
        stopped: number;
      };
      if (cmd.json) return cmd.out.json(result);
      cmd.out.text(`stopped ${result.stopped} item${result.stopped === 1 ? '' : 's'} of ${session}\n`);
    },
  },
];

function parseMeta(pairs: string[] | undefined): Record<string, string> | undefined {
  if (!pairs) return undefined;
  const metadata: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq < 1) throw new UsageError(`--meta wants key=value, got ${JSON.stringify(pair)}`);
    metadata[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return metadata;
}
