/**
 * Claim identity and rank, as Check reads them from record headers. A record belongs to the
 * claim with the same (iteration, attempt, stream_seq, delivered); the nonce is left out because
 * every delivery of one dispatch shares it. Claims of one iteration rank by (attempt,
 * stream_seq, delivered): a higher attempt is newer; in one attempt a resend (higher stream_seq)
 * is newer; in one message a later delivery is newer. A stream_seq of 0 means unknown, and then
 * delivered alone decides.
 */
import type { Task } from './types.js';

export type Identity = Pick<Task, 'attempt' | 'streamSeq' | 'delivered'>;

/** < 0 when `a` is older than `b`, > 0 when newer, 0 for the same claim. */
export function compareRank(a: Identity, b: Identity): number {
  if (a.attempt !== b.attempt) return a.attempt - b.attempt;
  const sa = a.streamSeq ?? 0;
  const sb = b.streamSeq ?? 0;
  if (sa !== 0 && sb !== 0 && sa !== sb) return sa - sb;
  return a.delivered - b.delivered;
}

/** A key that is equal for every record written under one claim of one iteration. */
export function identityKey(task: Pick<Task, 'iteration'> & Identity): string {
  return `${task.iteration}/${task.attempt}/${task.streamSeq ?? 0}/${task.delivered}`;
}

/** How a violation names a claim: `attempt 2 delivered 1 stream_seq 11`. */
export function describeClaim(task: Identity): string {
  return `attempt ${task.attempt} delivered ${task.delivered} stream_seq ${task.streamSeq ?? 0}`;
}
