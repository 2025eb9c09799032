import { sql } from 'drizzle-orm';
import { rows, type SqlHandle } from '../db/handle.js';
import { withSpan } from '../telemetry/tracing.js';
import { WORK_COLUMNS } from './sql.js';
import type { Work } from './types.js';

/** An environment's healthchecks as an operator wants them: the last answer, and any question open. */
export interface EnvironmentHealthchecks {
  /**
   * The healthcheck a worker acknowledged last (newest `acknowledgedAt`), in whatever state it
   * is now — `stopped` once its worker stopped it — or null when none was ever answered. An
   * item handed out again after its worker died loses its acknowledgement, as on the wire.
   */
  answered: Work | null;
  /** The live healthcheck no worker has acknowledged yet (queued), or null. */
  waiting: Work | null;
}

/**
 * The environment's last answered healthcheck and its unanswered one, in one statement over
 * the healthcheck indexes (an environment's session items are never read).
 */
export function environmentHealthchecks(
  db: SqlHandle,
  environmentId: string,
): Promise<EnvironmentHealthchecks> {
  return withSpan('queue.environment_healthchecks', { 'environment.id': environmentId }, async () => {
    const found = await rows<Work & { answered: boolean }>(
      db,
      sql`(SELECT true AS answered, ${WORK_COLUMNS} FROM work_items w
            WHERE w.healthcheck_environment_id = ${environmentId} AND w.acknowledged_at IS NOT NULL
            ORDER BY w.acknowledged_at DESC LIMIT 1)
          UNION ALL
          (SELECT false, ${WORK_COLUMNS} FROM work_items w
            WHERE w.environment_id = ${environmentId} AND w.data_type = 'healthcheck' AND w.state = 'queued')`,
    );
    const pick = (answered: boolean) => {
      const row = found.find((r) => r.answered === answered);
      if (!row) return null;
      const { answered: _answered, ...work } = row;
      return work;
    };
    return { answered: pick(true), waiting: pick(false) };
  });
}
