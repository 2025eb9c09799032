/** `stats <environment_id> [--watch]`: the queue's gauges, once or every `--interval` seconds until Ctrl-C. */
import { expectPositionals, integer } from '../args.js';
import { seg } from '../client.js';
import type { Command, CommandDef } from '../context.js';
import { formatTable } from '../table.js';

interface WireStats {
  depth: number;
  pending: number;
  oldest_queued_at: string | null;
  workers_polling: number;
}

const HEADERS = ['DEPTH', 'PENDING', 'OLDEST QUEUED', 'WORKERS POLLING'];

export const statsCommands: CommandDef[] = [
  {
    name: 'stats',
    usage: '<environment_id> [--watch] [--interval seconds]',
    summary: 'show queue depth, pending items, oldest queued item and polling workers',
    details:
      'Environment key or API key. --watch repeats every --interval seconds (default 2) until ' +
      'Ctrl-C; with --json it prints one JSON document per line.',
    options: { watch: { type: 'boolean', short: 'w' }, interval: { type: 'string' } },
    async run(cmd: Command) {
      const [env] = expectPositionals(cmd.positionals, ['environment_id']);
      const intervalMs = integer(cmd.values, 'interval', 2, 1, 3600) * 1000;
      const read = async () =>
        (await cmd.client.get(`/v1/environments/${seg(env!)}/work/stats`)) as WireStats;
      const row = (s: WireStats) => [s.depth, s.pending, s.oldest_queued_at, s.workers_polling];
      if (cmd.values.watch !== true) {
        const s = await read();
        if (cmd.json) return cmd.out.json(s);
        return cmd.out.text(formatTable(HEADERS, [row(s)]));
      }
      const interrupt = cmd.deps.interrupt();
      for (let first = true; !interrupt.aborted; first = false) {
        const s = await read();
        const at = new Date().toISOString();
        if (cmd.json) cmd.out.jsonLine({ ...s, at });
        else {
          const table = formatTable(['AT', ...HEADERS], [[at, ...row(s)]]);
          // Header once; each sample after it is one more row.
          cmd.out.text(first ? table : table.slice(table.indexOf('\n') + 1));
        }
        await cmd.deps.sleep(intervalMs, interrupt);
      }
    },
  },
];
