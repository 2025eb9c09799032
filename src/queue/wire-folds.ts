/**
 * The HTTP lanes' hot statements, folded per database handle (db/fold.ts): acks, heartbeats
 * and stops that arrive while one of them is in flight share the next statement
 * (`wireWritesMany`), and so do polls (`pollMany`, one statement per environment and reclaim
 * window among them). On the platform lane: claims (`claimMany`, one statement per kind and
 * lease length among them), completions (`completeMany`) and complete-and-claim steps
 * (`completeThenClaimMany`, one statement per kind and lease length). The same calls as
 * `ack`, `heartbeat`, `stopWork`, `poll`, `claim`, `complete` and `completeThenClaim`, with
 * the same answers; a call arriving alone is sent alone, by its own operation.
 *
 * One per database handle (`wireFolds`), for a host whose handle serves all its requests
 * (Node, PGlite): the folds fold across them. A Worker's handle lives for one request and has
 * nothing to fold; it uses `directCalls` and never loads this module (work-calls.ts).
 */

import { Fold } from '../db/fold.js';
import type { SqlHandle } from '../db/handle.js';
import type { AckCall } from './ack-many.js';
import { claimMany } from './claim-many.js';
import { completeMany } from './complete-many.js';
import { completeThenClaimMany } from './complete-then-claim-many.js';
import type { HeartbeatCall } from './heartbeat-many.js';
import { pollMany } from './poll-many.js';
import type { StopCall } from './stop-many.js';
import type { HeartbeatResult, Item, Work } from './types.js';
import { type WireWrite, type WireWriteAnswer, wireWritesMany } from './wire-writes.js';
import { type ClaimCall, directCalls, type PollCall, type StepCall, type WorkCalls } from './work-calls.js';

export class WireFolds implements WorkCalls {
  /** Acks, heartbeats and stops: one statement carries any mix of them. */
  readonly writes: Fold<WireWrite, WireWriteAnswer>;
  readonly polls: Fold<PollCall & { call: number }, Work | null>;
  readonly claims: Fold<ClaimCall & { call: number }, Item | null>;
  /** Platform completions and complete-and-claim steps, one per held item. */
  readonly completions: Fold<Item, undefined>;
  readonly steps: Fold<StepCall, Item | null>;
  #calls = 0;

  constructor(db: SqlHandle) {
    // A call alone is what a host without folds sends.
    const alone = directCalls(db);
    this.writes = new Fold({
      key: (w) => w.workId,
      one: (w) => writeAlone(alone, w),
      many: (writes) => wireWritesMany(db, writes),
    });
    this.polls = handOutFold(
      (p) => `${p.environmentId} ${p.reclaimMs}`,
      (p) => alone.poll(p),
      (p, n) => pollMany(db, p.environmentId, p.reclaimMs, n),
    );
    this.claims = handOutFold(
      (c) => `${c.kind} ${c.ttlMs}`,
      (c) => alone.claim(c),
      (c, n) => claimMany(db, c.kind, n, c.ttlMs),
    );
    this.completions = new Fold({
      key: (held) => held.id,
      one: async (held) => {
        await alone.complete(held);
        return undefined;
      },
      many: async (held) => {
        // A lost lease is not answered here: its call runs alone, for its LeaseLostError.
        const { completed } = await completeMany(db, held);
        return new Map(completed.map((id) => [id, undefined]));
      },
    });
    this.steps = new Fold({
      key: (s) => s.held.id,
      one: (s) => alone.completeThenClaim(s),
      many: (steps) => stepsMany(db, steps),
    });
  }

  claim(call: ClaimCall): Promise<Item | null> {
    return this.claims.run({ ...call, call: ++this.#calls });
  }

  async complete(held: Item): Promise<void> {
    await this.completions.run(held);
  }

  completeThenClaim(call: StepCall): Promise<Item | null> {
    return this.steps.run(call);
  }

  poll(call: PollCall): Promise<Work | null> {
    return this.polls.run({ ...call, call: ++this.#calls });
  }

  async ack(call: AckCall): Promise<Work> {
    return ((await this.writes.run({ op: 'ack', ...call })) as { work: Work }).work;
  }

  async heartbeat(call: HeartbeatCall): Promise<HeartbeatResult> {
    return ((await this.writes.run({ op: 'heartbeat', ...call })) as { result: HeartbeatResult }).result;
  }

  async stop(call: StopCall): Promise<{ work: Work; callsOpen: boolean }> {
    const { work, callsOpen } = (await this.writes.run({ op: 'stop', ...call })) as {
      work: Work;
      callsOpen: boolean;
    };
    return { work, callsOpen };
  }
}

/** One write by its own operation (`calls`, a host's one-statement calls), with every answer it gives. */
export async function writeAlone(calls: WorkCalls, w: WireWrite): Promise<WireWriteAnswer> {
  switch (w.op) {
    case 'ack':
      return { op: 'ack', work: await calls.ack(w) };
    case 'heartbeat':
      return { op: 'heartbeat', result: await calls.heartbeat(w) };
    case 'stop':
      return { op: 'stop', ...(await calls.stop(w)) };
  }
}

/**
 * A fold of hand-outs (polls, claims): calls that never collide (each is its own key) and
 * share a statement per `group` (one environment and reclaim window, one kind and lease
 * length). `many(first, n)` hands out up to `n` items, oldest first: the oldest goes to the
 * oldest call, and a call that got none found none, as it would have alone. A group whose
 * statement failed wrote nothing and answers nothing (its calls run alone); the others' items
 * are handed out, so they are answered whatever the rest did.
 */
function handOutFold<C, T>(
  group: (call: C) => string,
  one: (call: C) => Promise<T | null>,
  many: (first: C, n: number) => Promise<T[]>,
): Fold<C & { call: number }, T | null> {
  return new Fold<C & { call: number }, T | null>({
    key: (c) => String(c.call),
    one,
    many: async (calls) => {
      const answers = new Map<string, T | null>();
      await eachGroup([...groupBy(calls, group).values()], async (g) => {
        const items = await many(g[0]!, g.length);
        for (const [i, c] of g.entries()) answers.set(String(c.call), items[i] ?? null);
      });
      return answers;
    },
  });
}

/**
 * Steps of one kind and lease length share a statement; each holder whose item it completed
 * gets the next item it leased (the oldest to the first caller) or null when the lane ran
 * out, as alone. A holder it did not complete is not answered: its call runs alone and is
 * told its lease was lost. A group whose statement failed wrote nothing (its calls run
 * alone); the others keep what they completed and leased.
 */
async function stepsMany(db: SqlHandle, calls: StepCall[]): Promise<Map<string, Item | null>> {
  const answers = new Map<string, Item | null>();
  await eachGroup([...groupBy(calls, (c) => `${c.kind} ${c.ttlMs}`).values()], async (group) => {
    const first = group[0]!;
    const { completed, next } = await completeThenClaimMany(
      db,
      group.map((c) => c.held),
      first.kind,
      first.ttlMs,
    );
    const finished = new Set(completed);
    let handed = 0;
    for (const c of group) if (finished.has(c.held.id)) answers.set(c.held.id, next[handed++] ?? null);
  });
  return answers;
}

/**
 * Runs a statement per group, all at once. A group that failed wrote nothing and answers
 * nothing (its calls run alone); when every group failed, the fold is told so, as for one
 * statement that failed as a whole.
 */
async function eachGroup<T>(groups: T[][], run: (group: T[]) => Promise<void>): Promise<void> {
  const results = await Promise.allSettled(groups.map((g) => run(g)));
  const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed.length > 0 && failed.length === results.length) throw failed[0]!.reason;
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group) group.push(item);
    else groups.set(k, [item]);
  }
  return groups;
}

const folds = new WeakMap<SqlHandle, WireFolds>();

export function wireFolds(db: SqlHandle): WireFolds {
  let f = folds.get(db);
  if (!f) {
    f = new WireFolds(db);
    folds.set(db, f);
  }
  return f;
}
