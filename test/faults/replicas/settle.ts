/**
 * Settles what the clients could not know, from the database after the run: whether an
 * enqueue whose answer was lost made a row, and whether a holder write whose answer was lost
 * (its retry refused) was the one that finished the item. The latter is read from the change
 * log: a finish of exactly that attempt (its id, and on the claim lane its lease and claim
 * count). The audit then counts it like any accepted write, so a second acceptance is caught.
 */
import { sql } from 'drizzle-orm';
import { maybeRow, rows } from '../../../src/db/handle.js';
import type { Outcome, Unit } from '../contention/audit.js';
import type { Run } from './run.js';

export interface Settled {
  /** The audit's units: every acknowledged enqueue, and each unanswered one that made a row. */
  units: Unit[];
  /** The audit's outcomes, each ambiguous finish settled as accepted (it landed) or refused. */
  outcomes: Outcome[];
  enqueuesLanded: number;
  finishesLanded: number;
  /** Ambiguous finishes in all (complete/stop); the other ambiguous writes do not finish anything. */
  ambiguousFinishes: number;
}

export async function settle(run: Run): Promise<Settled> {
  const lost = run.ambiguousEnqueues.map((u) => u.sessionId);
  const landed = lost.length
    ? await rows<{ session_id: string; kind: string }>(
        run.db,
        sql`SELECT DISTINCT session_id, kind FROM work_history
             WHERE op = 'I' AND session_id IN (${sql.join(
               lost.map((s) => sql`${s}`),
               sql`, `,
             )})`,
      )
    : [];
  const units = [...run.units, ...landed.map((r) => ({ sessionId: r.session_id, kind: r.kind }))];

  const outcomes = [...run.outcomes];
  let ambiguousFinishes = 0;
  let finishesLanded = 0;
  for (const { outcome } of run.ambiguous) {
    if (outcome.call !== 'complete' && outcome.call !== 'stop') continue;
    ambiguousFinishes++;
    const finish = await maybeRow(
      run.db,
      sql`SELECT 1 AS ok FROM work_history
           WHERE op = 'U' AND old_id = ${outcome.workId} AND new_state = 'stopped' AND old_state <> 'stopped'
             AND (${outcome.proof}::timestamptz IS NULL OR old_lease = ${outcome.proof}::timestamptz)
             AND (${outcome.claims}::int IS NULL OR old_claims = ${outcome.claims}::int)`,
    );
    if (finish) finishesLanded++;
    outcomes.push({ ...outcome, outcome: finish ? 'accepted' : 'refused' });
  }
  return { units, outcomes, enqueuesLanded: landed.length, finishesLanded, ambiguousFinishes };
}
