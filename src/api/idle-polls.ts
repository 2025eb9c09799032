/**
 * Which environments' last long poll in this app found nothing on its first read: the order
 * of a long poll's first two steps where listening costs a statement of its own (a Worker
 * LISTENs on each request's connection).
 *
 * - An environment whose pollers keep finding nothing LISTENs first, then reads: two
 *   statements for an empty long poll, and nothing enqueued in between is missed.
 * - One whose last poll found work reads first: work already waiting costs one statement and
 *   one round trip, no LISTEN. Only when that read is empty does it LISTEN, and read again
 *   (an enqueue between the two would otherwise go unheard until the next poll).
 *
 * An environment not remembered counts as idle: a waiting poller is the common case, and
 * its long poll stays at two statements. The memory is per process (or Worker isolate) and
 * bounded: past `MAX_ENVIRONMENTS` the oldest are forgotten (and count as idle again).
 */

const MAX_ENVIRONMENTS = 10_000;

export class IdlePolls {
  private readonly busy = new Set<string>();

  /** True unless the environment's last long poll here found work on its first read. */
  idle(environmentId: string): boolean {
    return !this.busy.has(environmentId);
  }

  /** Notes what a long poll's first read found. */
  note(environmentId: string, foundWork: boolean): void {
    this.busy.delete(environmentId);
    if (!foundWork) return;
    if (this.busy.size >= MAX_ENVIRONMENTS) this.busy.delete(this.busy.values().next().value!);
    this.busy.add(environmentId);
  }
}
