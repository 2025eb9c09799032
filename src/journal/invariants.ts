/**
 * Check's invariants over one step's records, as pure functions so each definition can be read
 * and tested on its own. Every violation is a sentence that names the seq(s) involved.
 *
 * Terms used below:
 * - **accepted claim** of an iteration: its claim of the newest rank (claim-rank.ts). The engine
 *   dispatches a newer claim only after giving up on the older one, so the newest is the one it
 *   waits on. Its attempt is the **accepted attempt**; commits of that attempt by any delivery
 *   count as its commits (a redelivery that finds its attempt's commit writes no claim).
 * - **in progress**: the newest iteration while its accepted attempt has no commit yet.
 */
import { compareRank, describeClaim, identityKey } from './claim-rank.js';
import { type JournalRecord, type RecordOf, storedType } from './types.js';

export interface IterationView {
  iteration: number;
  records: JournalRecord[];
  accepted: RecordOf<'claim'> | null;
  acceptedCommits: RecordOf<'commit'>[];
}

export function iterationViews(records: JournalRecord[]): IterationView[] {
  const byIteration = new Map<number, JournalRecord[]>();
  for (const r of records) {
    const list = byIteration.get(r.task.iteration) ?? [];
    list.push(r);
    byIteration.set(r.task.iteration, list);
  }
  return [...byIteration.entries()]
    .sort(([a], [b]) => a - b)
    .map(([iteration, list]) => {
      let accepted: RecordOf<'claim'> | null = null;
      for (const r of list) {
        if (r.type === 'claim' && (!accepted || compareRank(r.task, accepted.task) > 0)) accepted = r;
      }
      const acceptedCommits: RecordOf<'commit'>[] = [];
      for (const r of list) {
        if (accepted && r.type === 'commit' && r.task.attempt === accepted.task.attempt)
          acceptedCommits.push(r);
      }
      return { iteration, records: list, accepted, acceptedCommits };
    });
}

const seqs = (records: JournalRecord[]) => records.map((r) => r.seq).join(', ');

/**
 * 1: each iteration has exactly one commit from its accepted attempt. Commits of superseded
 * attempts are allowed (a `fail` before a retry, or a commit the engine ignored after a timeout);
 * one written after the accepted claim is invariant 2's to report.
 */
export function invariant1(views: IterationView[]): string[] {
  const out: string[] = [];
  const newest = views[views.length - 1]?.iteration;
  for (const v of views) {
    if (!v.accepted) {
      out.push(`invariant 1: iteration ${v.iteration} has no claim (records at seq ${seqs(v.records)})`);
      continue;
    }
    const n = v.acceptedCommits.length;
    if (n === 1 || (n === 0 && v.iteration === newest)) continue;
    const who = `accepted attempt ${v.accepted.task.attempt} (claim at seq ${v.accepted.seq})`;
    out.push(
      n === 0
        ? `invariant 1: iteration ${v.iteration} has no commit from ${who}, yet a later iteration exists`
        : `invariant 1: iteration ${v.iteration} has ${n} commits from ${who}, at seq ${seqs(v.acceptedCommits)}`,
    );
  }
  return out;
}

/**
 * 2: no record follows the claim that fenced its writer. In journal order, a record is out of
 * place when a newer claim of its iteration, or any claim of a later iteration, came before it
 * (the append rule fences on both), or when its own claim never came before it at all.
 */
export function invariant2(records: JournalRecord[]): string[] {
  const out: string[] = [];
  const fence = new Map<number, JournalRecord>();
  const claimed = new Set<string>();
  let latest: JournalRecord | null = null;
  for (const r of records) {
    const what = `seq ${r.seq} (${storedType(r)}, iteration ${r.task.iteration}, ${describeClaim(r.task)})`;
    if (latest && latest.task.iteration > r.task.iteration) {
      out.push(
        `invariant 2: ${what} follows the claim of iteration ${latest.task.iteration} at seq ${latest.seq}`,
      );
      continue;
    }
    const newest = fence.get(r.task.iteration);
    if (newest && compareRank(r.task, newest.task) < 0) {
      out.push(`invariant 2: ${what} follows the newer claim at seq ${newest.seq} that fenced it`);
      continue;
    }
    if (r.type === 'claim') {
      claimed.add(identityKey(r.task));
      fence.set(r.task.iteration, r);
      latest = r;
    } else if (!claimed.has(identityKey(r.task))) {
      out.push(`invariant 2: ${what} has no claim of its own before it`);
    }
  }
  return out;
}

/**
 * 4: inside the accepted attempt, every tool.intent has exactly one tool.result with the same
 * (call, key). Superseded attempts may leave an intent open: the next attempt honours it by
 * content. An iteration in progress may have a tool running, so only committed attempts count.
 */
export function invariant4(views: IterationView[]): string[] {
  const out: string[] = [];
  for (const v of views) {
    if (!v.accepted || v.acceptedCommits.length === 0) continue;
    const attempt = v.accepted.task.attempt;
    const mine = v.records.filter((r) => r.task.attempt === attempt);
    const results = new Map<string, JournalRecord[]>();
    for (const r of mine) {
      if (r.type !== 'tool.result') continue;
      const k = callKey(r.data);
      results.set(k, [...(results.get(k) ?? []), r]);
    }
    for (const intent of mine) {
      if (intent.type !== 'tool.intent') continue;
      const body = intent.data;
      const found = results.get(callKey(body)) ?? [];
      if (found.length === 1) continue;
      const call = `call ${body.call} key ${body.key}`;
      out.push(
        found.length === 0
          ? `invariant 4: tool.intent at seq ${intent.seq} (${call}) has no tool.result in accepted attempt ${attempt}`
          : `invariant 4: tool.intent at seq ${intent.seq} (${call}) has ${found.length} tool.results, at seq ${seqs(found)}`,
      );
    }
  }
  return out;
}

const callKey = (b: { call: number; key: string }) => `${b.call}\u0000${b.key}`;

/** 5: no request_id is placed twice, in any iteration, by any claim. */
export function invariant5(records: JournalRecord[]): string[] {
  const placed = new Map<string, JournalRecord[]>();
  for (const r of records) {
    if (r.type !== 'input.placed') continue;
    const id = r.data.request_id;
    placed.set(id, [...(placed.get(id) ?? []), r]);
  }
  return [...placed.entries()]
    .filter(([, list]) => list.length > 1)
    .map(
      ([id, list]) => `invariant 5: request_id ${id} is placed ${list.length} times, at seq ${seqs(list)}`,
    );
}

/**
 * 6: the iterations agree with the accepted `continue` commits (C). In the journal, the
 * iterations present must be exactly 0..C, or 0..C-1 while the newest one's continue waits for
 * the engine's next dispatch. Given the engine's count of dispatched iterations, that count must
 * also be C + 1 (strict: a continue the engine has not applied yet shows as a mismatch).
 */
export function invariant6(views: IterationView[], engineIterations?: number): string[] {
  const out: string[] = [];
  const continues = views.filter((v) => acceptedAction(v) === 'continue').length;
  const present = views.map((v) => v.iteration);
  const newest = views[views.length - 1];
  const waiting = newest !== undefined && acceptedAction(newest) === 'continue';
  const contiguous = present.every((it, i) => it === i);
  const fits = present.length === continues + 1 || (waiting && present.length === continues);
  if (present.length > 0 && !(contiguous && fits)) {
    out.push(
      `invariant 6: iterations [${present.join(', ')}] exist but ${continues} accepted continue commits allow iterations 0..${continues}`,
    );
  }
  if (engineIterations !== undefined && engineIterations !== continues + 1) {
    out.push(
      `invariant 6: the engine counts ${engineIterations} iterations but the journal has ${continues} accepted continue commits (expected ${continues + 1})`,
    );
  }
  return out;
}

/** The action of the iteration's accepted commit (its last, should invariant 1 find several). */
function acceptedAction(v: IterationView): string | undefined {
  return v.acceptedCommits[v.acceptedCommits.length - 1]?.data.action;
}

/**
 * Chain: each record was stored with Nats-Expected-Last-Subject-Sequence equal to the seq of
 * the record before it on the subject (0 for the first), which proves it went through the fence.
 */
export function chain(records: JournalRecord[]): string[] {
  const out: string[] = [];
  let previous = 0;
  for (const r of records) {
    if (r.expectedSeq === null) {
      out.push(`chain: seq ${r.seq} was stored without an expected last subject sequence (unfenced write)`);
    } else if (r.expectedSeq !== previous) {
      out.push(
        `chain: seq ${r.seq} expected last subject seq ${r.expectedSeq}, but the record before it is seq ${previous}`,
      );
    }
    previous = r.seq;
  }
  return out;
}
