/**
 * Twin items for the batched lease-holder writes: each case builds two items through the same
 * steps, sends one its operation alone and the other the batched statement (all cases in one
 * batch), and reports both outcomes in a form that does not depend on ids or clock readings,
 * so a test can require them to be equal.
 */

import type { SqlHandle } from '../../src/db/handle.js';
import { newId } from '../../src/ids.js';
import type { Work } from '../../src/queue/types.js';
import {
  insertWork,
  leaseWindowMs,
  readStoredWork,
  setupSession,
  type WireStage,
  wireWork,
} from './factories.js';

/** Where a case's item stands: a wire stage, or an id the caller's key must not see. */
export type TwinStage = WireStage | 'foreign' | 'claim_lane' | 'missing';

export interface TwinItem {
  id: string;
  /** The environment the call names (another one for `foreign`). */
  environmentId: string;
  lastHeartbeat: string | null;
}

export interface TwinCase<C> {
  name: string;
  stage: TwinStage;
  call(item: TwinItem): C;
}

/** One side's outcome: the answer (or that it was not settled by the statement) and the row after. */
export interface TwinOutcome {
  answer: unknown;
  row: unknown;
}

const STAMPS = [
  'createdAt',
  'acknowledgedAt',
  'startedAt',
  'lastHeartbeat',
  'stopRequestedAt',
  'stoppedAt',
  'leaseExpiresAt',
] as const;

/** A work item with its ids dropped and its stamps reduced to whether they are set. */
export function workShape(work: Work): Record<string, unknown> {
  const { id: _id, environmentId: _env, sessionId: _session, ...rest } = work;
  const shaped: Record<string, unknown> = { ...rest };
  for (const k of STAMPS) shaped[k] = work[k] === null ? null : 'set';
  return shaped;
}

/**
 * The row after the call, and its lease: 'kept' when the call left it as it was (its window
 * from the last update would depend on the clock), else the window the call granted.
 */
async function rowShape(db: SqlHandle, id: string, leaseBefore: string | null): Promise<unknown> {
  const stored = await readStoredWork(db, id);
  if (!stored) return null;
  const lease = stored.leaseExpiresAt === leaseBefore ? 'kept' : await leaseWindowMs(db, id);
  return { ...workShape(stored), lease };
}

async function leaseOf(db: SqlHandle, id: string): Promise<string | null> {
  return (await readStoredWork(db, id))?.leaseExpiresAt ?? null;
}

async function build(db: SqlHandle, stage: TwinStage): Promise<TwinItem> {
  const target = await setupSession(db);
  if (stage === 'missing')
    return { id: newId('work'), environmentId: target.environmentId, lastHeartbeat: null };
  if (stage === 'claim_lane') {
    const [id] = await insertWork(db, target, { kind: 'model_turn' });
    return { id: id!, environmentId: target.environmentId, lastHeartbeat: null };
  }
  const { id, lastHeartbeat } = await wireWork(db, target, stage === 'foreign' ? 'active' : stage);
  const environmentId = stage === 'foreign' ? (await setupSession(db)).environmentId : target.environmentId;
  return { id, environmentId, lastHeartbeat };
}

/**
 * Runs every case on its twins: `alone` on the first of each pair, `many` once on all the
 * seconds. An answer is `shape(result)` when settled; `alone`'s error is reported by its class
 * name in `errors`, and `many`'s unsettled calls as 'not settled'.
 */
export async function runTwins<C, R>(
  db: SqlHandle,
  cases: TwinCase<C>[],
  ops: {
    alone(call: C): Promise<R>;
    many(calls: C[]): Promise<Map<string, R>>;
    key(call: C): string;
    shape(result: R): unknown;
  },
): Promise<{
  alone: Record<string, TwinOutcome>;
  many: Record<string, TwinOutcome>;
  errors: Record<string, string>;
}> {
  const pairs = [];
  for (const c of cases) pairs.push({ c, a: await build(db, c.stage), b: await build(db, c.stage) });
  const alone: Record<string, TwinOutcome> = {};
  const errors: Record<string, string> = {};
  for (const { c, a } of pairs) {
    const before = await leaseOf(db, a.id);
    let answer: unknown;
    try {
      answer = ops.shape(await ops.alone(c.call(a)));
    } catch (err) {
      errors[c.name] = (err as Error).constructor.name;
      answer = 'not settled';
    }
    alone[c.name] = { answer, row: await rowShape(db, a.id, before) };
  }
  const calls = pairs.map(({ c, b }) => c.call(b));
  const before = await Promise.all(pairs.map(({ b }) => leaseOf(db, b.id)));
  const settled = await ops.many(calls);
  const many: Record<string, TwinOutcome> = {};
  for (const [i, { c, b }] of pairs.entries()) {
    const result = settled.get(ops.key(calls[i]!));
    many[c.name] = {
      answer: result === undefined ? 'not settled' : ops.shape(result),
      row: await rowShape(db, b.id, before[i]!),
    };
  }
  return { alone, many, errors };
}
