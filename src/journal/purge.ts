import { JetStreamApiError, type JetStreamManager } from '@nats-io/jetstream';
import { assertToken, JOURNAL_STREAM } from './types.js';

/**
 * Purges every step of one run (`journal.{run}.>`) and returns how many records went. Only for
 * a run nobody will write again — a deleted session's: a purge erases the fence with the
 * history. Idempotent; a missing stream has nothing to purge.
 */
export async function purgeRun(jsm: JetStreamManager, runId: string): Promise<number> {
  assertToken('run id', runId);
  try {
    return (await jsm.streams.purge(JOURNAL_STREAM, { filter: `journal.${runId}.>` })).purged;
  } catch (err) {
    if (err instanceof JetStreamApiError && err.code === 10059) return 0;
    throw err;
  }
}
