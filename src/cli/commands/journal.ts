/**
 * `journal read|check` over the platform lane (platform or admin API key; the server needs
 * NATS_URL, else 503), and `journal provision`, which talks to NATS itself.
 */
import type { WireRecord, WireReport } from '../../api/routes/journal-wire.js';
import { ConfigError, parseConfig } from '../../config.js';
import { expectPositionals, integer, text } from '../args.js';
import { seg } from '../client.js';
import type { Command, CommandDef } from '../context.js';
import { FindingError, UsageError } from '../errors.js';
import { formatTable } from '../table.js';

interface JournalPage {
  data: WireRecord[];
  next_after_seq: number | null;
}

/** The API's largest page: a long journal is read in as few requests as it allows. */
const PAGE_LIMIT = 1000;
/** How much of a record's body a table row shows. */
const SUMMARY_CHARS = 60;
/** The largest --after-seq the parser takes (nine digits): far past any real journal. */
const MAX_SEQ = 999_999_999;

export const journalCommands: CommandDef[] = [
  {
    name: 'journal read',
    usage: '<run> <step> [--after-seq n]',
    summary: 'print a step’s journal records in order (every page)',
    details: 'Platform or admin API key; the server needs NATS_URL.',
    options: { 'after-seq': { type: 'string' } },
    async run(cmd: Command) {
      const [run, step] = expectPositionals(cmd.positionals, ['run', 'step']);
      const path = `/v1/platform/runs/${seg(run!)}/steps/${seg(step!)}/journal`;
      const records: WireRecord[] = [];
      let after: number | null = integer(cmd.values, 'after-seq', 0, 0, MAX_SEQ);
      while (after !== null) {
        const page = (await cmd.client.get(path, { after_seq: after, limit: PAGE_LIMIT })) as JournalPage;
        records.push(...page.data);
        after = page.next_after_seq;
        if (after !== null) cmd.out.progress(`read ${records.length} records…`);
      }
      // Every page in one document, shaped like one page that reached the tail.
      if (cmd.json) return cmd.out.json({ data: records, next_after_seq: null });
      cmd.out.text(
        formatTable(
          ['SEQ', 'TIME', 'TYPE', 'ITERATION', 'ATTEMPT', 'INDEX', 'DATA'],
          records.map((r) => [r.seq, r.time, r.type, r.iteration, r.attempt, r.index, summary(r.data)]),
        ),
      );
    },
  },
  {
    name: 'journal check',
    usage: '<run>',
    summary: 'check a run’s journals against the journal invariants',
    details:
      'Platform or admin API key; the server needs NATS_URL. Exits 1 when the report has a ' +
      'violation (after printing it), so a script can gate on it.',
    async run(cmd: Command) {
      const [run] = expectPositionals(cmd.positionals, ['run']);
      const report = (await cmd.client.get(`/v1/platform/runs/${seg(run!)}/check`)) as WireReport;
      if (cmd.json) cmd.out.json(report);
      else {
        cmd.out.text(
          formatTable(
            ['STEP', 'RECORDS', 'COMMITS', 'VIOLATIONS'],
            report.steps.map((s) => [s.step_id, s.records, s.commits, s.violations.length]),
          ),
        );
        for (const s of report.steps)
          for (const v of s.violations) cmd.out.text(`violation in ${s.step_id}: ${v}\n`);
        for (const s of report.skipped) cmd.out.text(`not checked: ${s}\n`);
        cmd.out.text(
          `${report.ok ? 'ok' : 'VIOLATIONS FOUND'}: run ${report.run_id}, ${report.steps.length} step(s)\n`,
        );
      }
      if (!report.ok) {
        const n = report.steps.reduce((sum, s) => sum + s.violations.length, 0);
        throw new FindingError(`run ${report.run_id} has ${n} journal violation${n === 1 ? '' : 's'}`);
      }
    },
  },
  {
    name: 'journal provision',
    usage: '[--nats-url ws://…] [--replicas n]',
    summary: 'create the AGENT_JOURNAL stream, or check that the existing one keeps the fence',
    details:
      'Talks to NATS directly, no key needed. --nats-url defaults to NATS_URL, --replicas to ' +
      'LEASEHOLD_JOURNAL_REPLICAS (else 1; use 3 in production).',
    options: { 'nats-url': { type: 'string' }, replicas: { type: 'string' } },
    usesApi: false,
    async run(cmd: Command) {
      expectPositionals(cmd.positionals, []);
      // The settings' own parser checks them, as it does for the server and the npm script.
      let config: { natsUrl: string | null; journalReplicas: number };
      try {
        config = parseConfig({
          NATS_URL: text(cmd.values, 'nats-url') ?? cmd.deps.env.NATS_URL,
          LEASEHOLD_JOURNAL_REPLICAS: text(cmd.values, 'replicas') ?? cmd.deps.env.LEASEHOLD_JOURNAL_REPLICAS,
        });
      } catch (err) {
        if (err instanceof ConfigError) throw new UsageError(err.message);
        throw err;
      }
      const { natsUrl, journalReplicas: replicas } = config;
      if (!natsUrl) throw new UsageError('no NATS URL: pass --nats-url or set NATS_URL (ws:// or wss://)');
      cmd.out.progress(`provisioning AGENT_JOURNAL on ${natsUrl}…`);
      const { created } = await cmd.deps.provisionJournal(natsUrl, replicas);
      if (cmd.json) return cmd.out.json({ stream: 'AGENT_JOURNAL', created, replicas });
      cmd.out.text(
        `AGENT_JOURNAL ${created ? 'created' : 'already provisioned and compatible'} (replicas ${replicas})\n`,
      );
    },
  },
];

/** A record body in one short line: what a person scans a journal for. */
function summary(data: unknown): string {
  const json = JSON.stringify(data) ?? '';
  return json.length > SUMMARY_CHARS ? `${json.slice(0, SUMMARY_CHARS - 1)}…` : json;
}
