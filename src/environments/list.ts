import { sql } from 'drizzle-orm';
import { rows, type SqlHandle } from '../db/handle.js';
import { instant } from '../db/instant.js';
import { ENVIRONMENT_COLUMNS } from './sql.js';
import type { Environment, EnvironmentCursor } from './types.js';

/**
 * A page of environments, newest first by (created_at, id); archived ones only with
 * `includeArchived`. With `after`, continues strictly past that position. Fetches up to
 * `fetch` rows: pass limit + 1 to learn whether another page exists.
 */
export async function listEnvironments(
  db: SqlHandle,
  options: { after?: EnvironmentCursor | null; includeArchived?: boolean; fetch: number },
): Promise<Environment[]> {
  const after = options.after
    ? sql`AND (created_at, id) < (${afterInstant(options.after.createdAt)}, ${options.after.id})`
    : sql``;
  const archived = options.includeArchived ? sql`` : sql`AND archived_at IS NULL`;
  return rows<Environment>(
    db,
    sql`SELECT ${ENVIRONMENT_COLUMNS} FROM environments
         WHERE true ${archived} ${after}
         ORDER BY created_at DESC, id DESC
         LIMIT ${options.fetch}`,
  );
}

/** A cursor's created_at as an instant; cursors are checked when decoded, so this cannot fail. */
function afterInstant(createdAt: string) {
  const at = instant(createdAt);
  if (!at) throw new TypeError(`not a cursor position: ${JSON.stringify(createdAt)}`);
  return at;
}
