/**
 * The subject of the drain scenarios: Leasehold's claim lane used the way a platform's
 * workers use it — `concurrency` loops over one pool, each claiming, doing nothing, and
 * completing; in loop mode, completing each item and claiming the next in one statement
 * (`completeAndClaim`); or, in batch mode, claiming up to `batch` items per statement and
 * completing them together.
 */

import type pg from 'pg';
import type { Database } from '../../src/db/handle.js';
import { claim, claimMany, complete, completeAndClaim, completeMany } from '../../src/queue/index.js';

const TTL_MS = 60_000;

/** Opens every pooled connection before timing, so no subject pays for connecting. */
export async function warm(pool: pg.Pool, n: number): Promise<void> {
  const clients = await Promise.all(Array.from({ length: n }, () => pool.connect()));
  for (const c of clients) c.release();
}

/** Items/s for `count` items: single claims, or batches of `batch` when given. */
export async function drainLeasehold(
  db: Database,
  options: { concurrency: number; count: number; batch?: number; loop?: boolean; kind?: 'model_turn' },
): Promise<number> {
  const kind = options.kind ?? 'model_turn';
  let taken = 0;
  let done = 0;
  const started = performance.now();
  const loop = async () => {
    if (options.batch) {
      for (;;) {
        const want = Math.min(options.batch, options.count - taken);
        if (want <= 0) return;
        taken += want;
        const items = await claimMany(db, kind, want, TTL_MS);
        if (items.length < want) throw new Error(`the backlog ran dry after ${done} items`);
        const { lost } = await completeMany(db, items);
        if (lost.length) throw new Error(`${lost.length} leases lost in an uncontended drain`);
        done += items.length;
      }
    }
    if (options.loop) {
      // The worker loop: one claim, then each completion also takes the next item.
      if (taken++ >= options.count) return;
      let item = await claim(db, kind, TTL_MS);
      while (item) {
        const last = taken >= options.count;
        if (!last) taken++;
        const step = last
          ? { completed: await complete(db, item).then(() => true), next: null }
          : await completeAndClaim(db, item, kind, TTL_MS);
        if (!step.completed) throw new Error('a lease was lost in an uncontended drain');
        done++;
        if (!last && !step.next) throw new Error(`the backlog ran dry after ${done} items`);
        item = step.next;
      }
      return;
    }
    while (taken < options.count) {
      taken++;
      const item = await claim(db, kind, TTL_MS);
      if (!item) throw new Error(`the backlog ran dry after ${done} items`);
      await complete(db, item);
      done++;
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, loop));
  return done / ((performance.now() - started) / 1000);
}
