import { sql } from 'drizzle-orm';
import { rows, type SqlHandle } from '../db/handle.js';

/**
 * The ids of every self_hosted environment, archived ones included: an archived
 * environment's workers still poll (the work API is unaffected by archiving), so its queue
 * is still worth a gauge. What the queue metrics report on (docs/queue.md, "Telemetry").
 */
export async function listSelfHostedEnvironmentIds(db: SqlHandle): Promise<string[]> {
  const found = await rows<{ id: string }>(
    db,
    sql`SELECT id FROM environments WHERE kind = 'self_hosted' ORDER BY id`,
  );
  return found.map((row) => row.id);
}
