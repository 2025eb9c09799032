import { sql } from 'drizzle-orm';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { newId } from '../ids.js';
import { captureTraceContext } from '../telemetry/trace-context.js';
import { withSpan } from '../telemetry/tracing.js';
import { NOTIFY_WORK } from './enqueue.js';
import { LIVE_STATES, WORK_COLUMNS } from './sql.js';
import type { HealthcheckWork, TraceContext } from './types.js';

export interface HealthcheckResult {
  /** False when the environment's live healthcheck already covers it. */
  created: boolean;
  /** The new healthcheck, or the live one. */
  work: HealthcheckWork;
}

export interface HealthcheckInput {
  environmentId: string;
  /** Trace context to store. Absent → the active span's, if any (as `enqueue` does). */
  traceContext?: TraceContext | null;
}

/**
 * Queues a healthcheck for a self_hosted environment's workers: a poll-lane item (kind
 * `tool_exec`, `data_type` `healthcheck`) with a fresh `hc_…` id of its own and no session. A
 * worker polls, acks and stops it like any poll-lane item; the SDK's worker does exactly that
 * and runs nothing for it. Long polls of the environment wake at once.
 *
 * Idempotent per environment, as `enqueue` is per (session, kind): while a healthcheck of the
 * environment is live (queued, starting or active) that one is returned, `created: false`.
 * Null when no self_hosted environment has this id (none, or a cloud one: nothing of its own
 * polls it); the caller says which. One statement in the common case.
 */
export async function enqueueHealthcheck(
  db: SqlHandle,
  input: HealthcheckInput,
): Promise<HealthcheckResult | null> {
  const trace = input.traceContext === undefined ? captureTraceContext() : input.traceContext;
  return withSpan('queue.enqueue_healthcheck', { 'environment.id': input.environmentId }, async (span) => {
    // As in `enqueue`: a live healthcheck committed after this statement's snapshot makes the
    // insert do nothing and stays invisible to it; the next statement sees it. A second miss
    // means it just finished: insert again.
    for (let attempt = 0; attempt < 3; attempt++) {
      const row = await insertOrFindLive(db, input.environmentId, trace);
      if (row) {
        const { created, notified: _notified, ...work } = row;
        span.setAttributes({ 'work.id': work.id, 'work.created': created });
        return { created, work };
      }
      if (!(await selfHosted(db, input.environmentId))) return null;
    }
    throw new Error(
      `healthcheck for ${input.environmentId}: the live healthcheck kept changing under the insert`,
    );
  });
}

type CreatedRow = HealthcheckWork & { created: boolean; notified?: unknown };

function insertOrFindLive(db: SqlHandle, environmentId: string, trace: TraceContext | null) {
  return maybeRow<CreatedRow>(
    db,
    sql`WITH ins AS (
      INSERT INTO work_items (id, environment_id, data_type, healthcheck_id, healthcheck_environment_id,
                              kind, lane, trace_context)
      SELECT ${newId('work')}, e.id, 'healthcheck', ${newId('hc')}, e.id, 'tool_exec', 'poll',
             ${trace === null ? null : JSON.stringify(trace)}::jsonb
        FROM environments e WHERE e.id = ${environmentId} AND e.kind = 'self_hosted'
      ON CONFLICT (environment_id) WHERE data_type = 'healthcheck' AND state IN ${LIVE_STATES} DO NOTHING
      RETURNING *
    )
    SELECT true AS created, ${WORK_COLUMNS}, ${NOTIFY_WORK} AS notified
      FROM ins w
    UNION ALL
    SELECT false, ${WORK_COLUMNS}, NULL
      FROM work_items w
     WHERE w.environment_id = ${environmentId} AND w.data_type = 'healthcheck' AND w.state IN ${LIVE_STATES}
       AND NOT EXISTS (SELECT 1 FROM ins)`,
  );
}

async function selfHosted(db: SqlHandle, environmentId: string): Promise<boolean> {
  const row = await maybeRow(
    db,
    sql`SELECT 1 AS ok FROM environments WHERE id = ${environmentId} AND kind = 'self_hosted'`,
  );
  return row !== null;
}
