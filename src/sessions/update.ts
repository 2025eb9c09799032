import { sql } from 'drizzle-orm';
import { type Database, maybeRow } from '../db/handle.js';
import { applyMetadataPatch, MAX_METADATA_PAIRS, type MetadataPatch } from '../environments/index.js';
import { getSession } from './get.js';
import { SESSION_COLUMNS } from './sql.js';
import type { Session } from './types.js';

export interface SessionPatch {
  /** Absent: keep; null: clear. */
  title?: string | null;
  /** Keys set to a string are upserted, keys set to null (or "") deleted; absent: keep. */
  metadata?: MetadataPatch | null;
}

export type UpdateOutcome =
  | { ok: true; session: Session }
  | { ok: false; reason: 'not_found' | 'too_many_metadata_keys' };

/**
 * Applies a title and metadata patch to an API session under its row lock, so two patches of
 * different keys both land. A patch that would leave more than MAX_METADATA_PAIRS keys writes
 * nothing. Later work items carry the new metadata; items already queued keep theirs.
 */
export async function updateSession(db: Database, id: string, patch: SessionPatch): Promise<UpdateOutcome> {
  return db.transaction(async (tx): Promise<UpdateOutcome> => {
    const current = await getSession(tx, id, { lock: true });
    if (!current || current.agent === null) return { ok: false, reason: 'not_found' };
    const metadata = applyMetadataPatch(current.metadata, patch.metadata ?? undefined);
    if (Object.keys(metadata).length > MAX_METADATA_PAIRS)
      return { ok: false, reason: 'too_many_metadata_keys' };
    const title = patch.title === undefined ? current.title : patch.title;
    const session = await maybeRow<Session>(
      tx,
      sql`WITH s AS (
        UPDATE sessions SET title = ${title}, metadata = ${JSON.stringify(metadata)}::jsonb, updated_at = now()
         WHERE id = ${id} RETURNING *)
      SELECT ${SESSION_COLUMNS} FROM s`,
    );
    return { ok: true, session: session! };
  });
}
