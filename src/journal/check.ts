/**
 * Check audits a run's journals: it finds the run's steps from the stream's per-subject counts,
 * reads each step in full and evaluates invariants 1, 2, 4, 5 and 6 plus the fence chain
 * (definitions in invariants.ts). Invariant 3 needs a side-effect counter outside the journal,
 * so it is always reported as skipped. Read-only: it never writes to the stream.
 *
 * A record whose body cannot be decoded is a finding about the journal, not a failure of the
 * audit: it is reported as a violation of its step, and the rest of the step is checked without it.
 *
 * A run that is still going may show a step in progress; that is not a violation. Check reads
 * each step once, bounded by its tail at that moment, so records written meanwhile wait for the
 * next check.
 */
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import {
  chain,
  invariant1,
  invariant2,
  invariant4,
  invariant5,
  invariant6,
  iterationViews,
} from './invariants.js';
import { readWhileLinkUp } from './link.js';
import { notProvisioned, read } from './read.js';
import { assertToken, JOURNAL_STREAM, type JournalRecord } from './types.js';

export interface CheckOptions {
  /**
   * Per step id, how many iterations the engine has dispatched (its 0-based iteration counter
   * + 1). When given, invariant 6 compares it with the accepted continue commits + 1; when not,
   * it compares the iterations present in the journal.
   */
  engineIterations?: Record<string, number>;
  /** Check only these steps of the run (those that have a journal); default every step. */
  stepIds?: readonly string[];
}

export interface StepReport {
  stepId: string;
  records: number;
  commits: number;
  violations: string[];
}

export interface CheckReport {
  runId: string;
  steps: StepReport[];
  /** The invariants not checked, each with the reason. */
  skipped: string[];
  /** True when no step has a violation. */
  ok(): boolean;
}

export const SKIPPED_INVARIANT_3 =
  'invariant 3 (a side effect runs at most once per unsafe position): needs a side-effect counter outside the journal';

export async function check(
  nc: NatsConnection,
  runId: string,
  opts: CheckOptions = {},
): Promise<CheckReport> {
  assertToken('runId', runId);
  const js = jetstream(nc);
  const steps: StepReport[] = [];
  const only = opts.stepIds ? new Set(opts.stepIds) : null;
  for (const stepId of (await runSteps(nc, runId)).filter((id) => only === null || only.has(id))) {
    const corrupt: string[] = [];
    const records = await read(js, runId, stepId, (err) =>
      corrupt.push(`corrupt: seq ${err.seq} ${err.finding}`),
    );
    steps.push({
      stepId,
      records: records.length + corrupt.length,
      commits: records.filter((r) => r.type === 'commit').length,
      violations: [...corrupt, ...checkRecords(records, opts.engineIterations?.[stepId])],
    });
  }
  return {
    runId,
    steps,
    skipped: [SKIPPED_INVARIANT_3],
    ok: () => steps.every((s) => s.violations.length === 0),
  };
}

/** Every violation in one step's records, in journal order of the invariants' numbers. */
function checkRecords(records: JournalRecord[], engineIterations?: number): string[] {
  const views = iterationViews(records);
  return [
    ...invariant1(views),
    ...invariant2(records),
    ...invariant4(views),
    ...invariant5(records),
    ...invariant6(views, engineIterations),
    ...chain(records),
  ];
}

/**
 * The run's step ids, sorted. Stream info with a subject filter lists each matching subject with
 * its message count (nats-server 2.9.10 included; the client pages through long lists). Only
 * three-token subjects are journals; a filter that matches nothing omits `subjects` entirely.
 */
async function runSteps(nc: NatsConnection, runId: string): Promise<string[]> {
  const info = await readWhileLinkUp(nc, `listing the steps of run ${runId}`, async () => {
    const jsm = await jetstreamManager(nc, { checkAPI: false });
    return jsm.streams
      .info(JOURNAL_STREAM, { subjects_filter: `journal.${runId}.>` })
      .catch((err: unknown) => {
        throw notProvisioned(err);
      });
  });
  return Object.keys(info.state.subjects ?? {})
    .map((subject) => subject.split('.'))
    .filter((tokens) => tokens.length === 3)
    .map((tokens) => tokens[2]!)
    .sort();
}
