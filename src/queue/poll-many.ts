import { sql } from 'drizzle-orm';
import { fixedSqlByLimit } from '../db/fixed-sql.js';
import { rows, type SqlHandle } from '../db/handle.js';
import { interval } from '../db/time.js';
import { newId } from '../ids.js';
import { recordHandOut, withSpan } from '../telemetry/tracing.js';
import { DEFAULT_RECLAIM_MS, finalizeAbandonedCte } from './poll.js';
import { pickPollable, reservedFor, WORK_COLUMNS } from './sql.js';
import type { Work } from './types.js';

const p = sql.placeholder;

/** The statement, rendered once for a single poll and once for a batch (fixed-sql.ts). */
const POLL = fixedSqlByLimit<'environmentId' | 'reservedBefore' | 'fresh'>(
  (limit) =>
    sql`WITH ${finalizeAbandonedCte(p('environmentId'))}, ${pickPollable(p('environmentId'), interval(p('reservedBefore')), limit)},
      numbered AS (SELECT id, first, row_number() OVER () - 1 AS n FROM picked),
      handed AS (
        -- id = ANY(…): the picked rows through the primary key even on a generic plan, whose
        -- guess for LIMIT $n would otherwise hash all of work_items.
        UPDATE work_items w
           SET id = CASE WHEN numbered.first THEN w.id ELSE ${p('fresh')}::jsonb ->> numbered.n::int END,
               ${reservedFor(DEFAULT_RECLAIM_MS)}
          FROM numbered
         WHERE w.id = ANY (ARRAY(SELECT id FROM numbered)) AND w.id = numbered.id
        RETURNING ${WORK_COLUMNS}, w.created_at AS created
      )
      -- UPDATE … RETURNING has no order of its own; hand the items out oldest first.
      SELECT * FROM handed ORDER BY created`,
);

/**
 * `n` polls of one environment with one reclaim window in one statement: hands out up to `n`
 * of its oldest available items, oldest first, each exactly as `poll` hands out one (the same
 * availability, the same reservation, a fresh id for a re-hand-out, the same wind-downs
 * finalized). Fewer, or none, when fewer are available: `n` polls one after another would
 * have found the same. Polls that record their worker go alone (`poll`'s `recordWorker`).
 */
export function pollMany(
  db: SqlHandle,
  environmentId: string,
  reclaimMs: number,
  n: number,
): Promise<Work[]> {
  return withSpan(
    'queue.poll_many',
    { 'environment.id': environmentId, 'work.batch_size': n },
    async (span) => {
      // One fresh id per item that may be handed out again, numbered as the picked rows are.
      const fresh = JSON.stringify(Array.from({ length: n }, () => newId('work')));
      const values = { environmentId, reservedBefore: DEFAULT_RECLAIM_MS - reclaimMs, n, fresh };
      const handed = await rows<Work & { created: unknown }>(db, POLL(values));
      span.setAttribute('work.handed_out', handed.length);
      return handed.map(({ created: _, ...work }) => {
        recordHandOut(work.traceContext, {
          'work.id': work.id,
          'environment.id': environmentId,
          'work.kind': work.kind,
        });
        return work;
      });
    },
  );
}
