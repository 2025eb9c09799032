import { sql } from 'drizzle-orm';
import { rows, type SqlHandle } from '../db/handle.js';
import { instant } from '../db/instant.js';
import { withSpan } from '../telemetry/tracing.js';
import { WORK_COLUMNS } from './sql.js';
import type { Timestamp, Work } from './types.js';

/** A keyset position: the (created_at, id) of the last item of the previous page. */
export interface WorkCursor {
  createdAt: Timestamp;
  id: string;
}

/**
 * A page of the environment's poll-lane items in every state, newest first by
 * (created_at, id). With `after`, continues strictly past that position. Fetches up to
 * `fetch` rows: pass limit + 1 to learn whether another page exists.
 *
 * A re-handed-out item gets a new id but keeps created_at, so an item rotating while a
 * client pages may show up twice or be skipped; pages are a view, not a snapshot.
 */
export function listWork(
  db: SqlHandle,
  environmentId: string,
  options: { after?: WorkCursor | null; fetch: number },
): Promise<Work[]> {
  const after = options.after
    ? sql`AND (w.created_at, w.id) < (${afterInstant(options.after.createdAt)}, ${options.after.id})`
    : sql``;
  // NULLS LAST as in work_items_list_idx (the columns are NOT NULL, so the order is the same):
  // a plain DESC means NULLS FIRST, which the index cannot give, and PostgreSQL would then sort
  // every item of the environment for each page.
  return withSpan('queue.list_work', { 'environment.id': environmentId }, () =>
    rows<Work>(
      db,
      sql`SELECT ${WORK_COLUMNS} FROM work_items w
           WHERE w.environment_id = ${environmentId} AND w.lane = 'poll' ${after}
           ORDER BY w.created_at DESC NULLS LAST, w.id DESC NULLS LAST
           LIMIT ${options.fetch}`,
    ),
  );
}

/** A cursor's created_at as an instant; cursors are checked when decoded, so this cannot fail. */
function afterInstant(createdAt: string) {
  const at = instant(createdAt);
  if (!at) throw new TypeError(`not a cursor position: ${JSON.stringify(createdAt)}`);
  return at;
}
