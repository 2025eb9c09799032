/**
 * The HTTP lanes' hot calls as one interface — the work API's poll, ack, heartbeat and stop,
 * and the platform lane's claim, complete and complete-and-claim — so a host chooses how they reach the
 * database: `directCalls`, a statement per call, or `WireFolds` (wire-folds.ts), which folds
 * concurrent calls into shared statements. A host whose handle lives for one request (a
 * Worker) has nothing to fold and does not load the folds.
 */
import type { SqlHandle } from '../db/handle.js';
import { ack } from './ack.js';
import type { AckCall } from './ack-many.js';
import { claim } from './claim.js';
import { completeThenClaim } from './complete-then-claim.js';
import { heartbeat } from './heartbeat.js';
import type { HeartbeatCall } from './heartbeat-many.js';
import { complete } from './lease.js';
import { poll } from './poll.js';
import { stopWork } from './stop.js';
import type { StopCall } from './stop-many.js';
import type { HeartbeatResult, Item, Work, WorkKind } from './types.js';

/** One poll that records no worker (a recording poll goes alone, with `poll`'s `recordWorker`). */
export interface PollCall {
  environmentId: string;
  reclaimMs: number;
}

/** A platform claim: lease the oldest available item of `kind` for `ttlMs`. */
export interface ClaimCall {
  kind: WorkKind;
  ttlMs: number;
}

/** A platform claimer's step: complete `held` under its proof, then lease the next item of `kind` for `ttlMs`. */
export interface StepCall {
  held: Item;
  kind: WorkKind;
  ttlMs: number;
}

export interface WorkCalls {
  poll(call: PollCall): Promise<Work | null>;
  ack(call: AckCall): Promise<Work>;
  heartbeat(call: HeartbeatCall): Promise<HeartbeatResult>;
  stop(call: StopCall): Promise<{ work: Work; callsOpen: boolean }>;
  /** `claim`: the item, or null on an empty lane. */
  claim(call: ClaimCall): Promise<Item | null>;
  /** `complete`: a lost lease throws `LeaseLostError`. */
  complete(held: Item): Promise<void>;
  /** `completeThenClaim`: the next item or null; a lost lease throws `LeaseLostError`. */
  completeThenClaim(call: StepCall): Promise<Item | null>;
}

/** Each call its own statement, by its own operation. */
export function directCalls(db: SqlHandle): WorkCalls {
  return {
    poll: (c) => poll(db, c.environmentId, c.reclaimMs),
    ack: (c) => ack(db, c.environmentId, c.workId),
    heartbeat: (c) => heartbeat(db, c.environmentId, c.workId, c.expected, c.ttlSeconds),
    stop: (c) => stopWork(db, c.environmentId, c.workId, c.force),
    claim: (c) => claim(db, c.kind, c.ttlMs),
    complete: (held) => complete(db, held),
    completeThenClaim: (c) => completeThenClaim(db, c.held, c.kind, c.ttlMs),
  };
}
