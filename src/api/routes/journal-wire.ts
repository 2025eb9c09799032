/**
 * The journal on the wire, snake_case as the Go package's JSON: a record carries its identity
 * flat beside its body, and a commit's `state` goes back to the base64 string it was stored as.
 */
import * as z from 'zod/mini';
import { toBase64 } from '../../base64.js';
import { type CheckReport, type JournalRecord, type Json, storedType } from '../../journal/index.js';

export function toWireRecord(r: JournalRecord) {
  return {
    seq: r.seq,
    time: r.time,
    type: storedType(r),
    iteration: r.task.iteration,
    attempt: r.task.attempt,
    delivered: r.task.delivered,
    stream_seq: r.task.streamSeq ?? 0,
    dispatch_nonce: r.task.dispatchNonce ?? null,
    index: r.index,
    data: wireBody(r),
  };
}

/** The body as it was stored: a commit's state back to its base64 text. */
function wireBody(r: JournalRecord): Json {
  if (r.type !== 'commit') return r.data;
  const { state, ...rest } = r.data;
  return state === undefined ? rest : { ...r.data, state: toBase64(state) };
}

/** A record as the journal routes answer it. */
export type WireRecord = ReturnType<typeof toWireRecord>;

const wireRecordSchema = z.object({
  seq: z.int().check(z.describe('stream sequence: the record position, and the cursor to resume after')),
  time: z.string().check(z.describe('when the server stored the record (RFC 3339)')),
  type: z
    .string()
    .check(
      z.describe('claim, entry, model.response, tool.intent, tool.result, pause, input.placed or commit'),
    ),
  iteration: z.int(),
  attempt: z.int(),
  delivered: z.int().check(z.describe('delivery count of the task message that wrote the record')),
  stream_seq: z.int().check(z.describe('sequence of that task message; 0 when unknown')),
  dispatch_nonce: z.nullable(z.string()),
  index: z.int().check(z.describe('ordinal of the record within its claim; the claim is 0')),
  data: z.unknown().check(z.describe('the record body as stored; a commit state is a base64 string')),
});

export const wireJournalPageSchema = z.object({
  data: z.array(wireRecordSchema),
  next_after_seq: z
    .nullable(z.int())
    .check(z.describe('pass as after_seq for the next page; null at the tail')),
});

export function toWireReport(report: CheckReport) {
  return {
    run_id: report.runId,
    ok: report.ok(),
    steps: report.steps.map((s) => ({
      step_id: s.stepId,
      records: s.records,
      commits: s.commits,
      violations: s.violations,
    })),
    skipped: report.skipped,
  };
}

/** A run's check() report as the journal routes answer it. */
export type WireReport = ReturnType<typeof toWireReport>;

export const wireCheckReportSchema = z.object({
  run_id: z.string(),
  ok: z.boolean().check(z.describe('true when no step has a violation')),
  steps: z.array(
    z.object({
      step_id: z.string(),
      records: z.int(),
      commits: z.int(),
      violations: z.array(z.string()).check(z.describe('one sentence per violation, naming the seqs')),
    }),
  ),
  skipped: z.array(z.string()).check(z.describe('invariants not checked, each with its reason')),
});
