/**
 * The subject of the drain scenarios: Leasehold's claim lane used the way a platform's
 * workers use it — `concurrency` loops over one pool, each claiming, doing nothing, and
 * completing; or, in batch mode, claiming up to `batch` items per statement and completing
 * them together.
 */

import type pg from 'pg';
import type { Database } from '../../src/db/handle.js';
import { claim, claimMany, complete, completeMany } from '../../src/queue/index.js';

const TTL_MS = 60_000;

/** Opens every pooled connection before timing, so no subject pays for connecting. */
export async function warm(pool: pg.Pool, n: number): Promise<void> {
  const clients = await Promise.all(Array.from({ length: n }, () => pool.connect()));
  for (const c of clients) c.release();
}

/** Items/s for `count` items: single claims, or batches of `batch` when given. */
export async function drainLeasehold(
  db: Database,
  options: { concurrency: number; count: number; batch?: number; kind?: 'model_turn' },
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
