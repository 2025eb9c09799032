import { sql } from 'drizzle-orm';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { instant } from '../db/instant.js';
import type { JournalPurgeClaim } from './claim-journal-purges.js';

/**
 * Deletes a purged run's row under the hold that purged it; true when it did. A hold that
 * lapsed and was taken again (or a run deleted again since) no longer matches, so each row is
 * forgotten — and counted — once.
 */
export async function forgetJournalPurge(db: SqlHandle, claim: JournalPurgeClaim): Promise<boolean> {
  const held = instant(claim.claimedUntil)!;
  const row = await maybeRow(
    db,
    sql`DELETE FROM journal_purges WHERE run_id = ${claim.runId} AND claimed_until = ${held} RETURNING 1 AS ok`,
  );
  return row !== null;
}
