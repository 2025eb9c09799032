/**
 * The journal's publishes and their PubAcks, sent on the core connection: one inbox
 * subscription per connection, each publish replying to `<inbox>.<n>`, and a table from `n` to
 * the publish waiting for it. The client's `js.publish` answers the same way, through its own
 * request table, but for every request it also makes a request object with a fresh random
 * token, a timer and two promises to race, and, after the answer, an `Error` (stack and all) to
 * reject a promise that is already resolved. With every append going through here, the writers
 * of the journal benchmark spend ≈ 20 µs less CPU an append at 8 steps, ≈ 42 against ≈ 65
 * (docs/benchmarks.md).
 *
 * What a publish answers, as the client would:
 * - the PubAck, or the server's refusal as `JetStreamApiError` (code, status, description);
 * - `NoResponderError`: nobody took the publish (no stream on the subject, or no leader);
 * - `TimeoutError` (nats-core's): no answer within `timeoutMs`. One timer per inbox, armed for
 *   the earliest deadline, replaces a timer per request;
 * - `LinkDownError`: the connection dropped (or closed) while the publish waited (link.ts),
 *   since an answer to a request sent before a drop never comes;
 * - a synchronous refusal of the client (closed connection, payload too large) as it threw it.
 */
import { JetStreamApiError, JetStreamError, type PubAck } from '@nats-io/jetstream';
import {
  createInbox,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  type Subscription,
  TimeoutError,
} from '@nats-io/nats-core';
import { type Clock, systemClock } from '../clock.js';
import { LinkDownError, onLinkDown } from './link.js';

/** No subscriber took the publish: nothing was stored. */
export class NoResponderError extends Error {
  constructor() {
    super('no responders');
    this.name = 'NoResponderError';
  }
}

interface Waiting {
  resolve(ack: PubAck): void;
  reject(err: unknown): void;
  /** The clock's time past which the publish has timed out. */
  deadline: number;
}

const utf8 = new TextDecoder();

class AckInbox {
  readonly #prefix: string;
  readonly #waiting = new Map<string, Waiting>();
  #next = 0;
  #sub: Subscription | null = null;
  #timer: unknown = null;
  /** When `#timer` fires (the clock's time). */
  #timerAt = Number.POSITIVE_INFINITY;
  /** The cancel of the link watch while something waits (re-armed after each drop). */
  #watching: (() => void) | null = null;

  constructor(
    private readonly nc: NatsConnection,
    private readonly clock: Clock,
  ) {
    const options = (nc as { options?: { inboxPrefix?: string } }).options;
    this.#prefix = `${createInbox(options?.inboxPrefix)}.`;
  }

  publish(subject: string, data: Uint8Array, headers: MsgHdrs, timeoutMs: number): Promise<PubAck> {
    this.#sub ??= this.nc.subscribe(`${this.#prefix}*`, { callback: (err, msg) => this.#answer(err, msg) });
    const token = (this.#next++).toString(36);
    // Sent before it is waited for: a refusal here throws (as `js.publish` rejects) and
    // leaves nothing in the table.
    this.nc.publish(subject, data, { reply: this.#prefix + token, headers });
    this.#watching ??= onLinkDown(this.nc, () => this.#dropped());
    const deadline = this.clock.now() + timeoutMs;
    // Publishes of one connection share a timeout unless their JetStream clients' differ: the
    // timer is re-armed only for a deadline earlier than the one it is set for.
    if (deadline < this.#timerAt) this.#arm(deadline);
    return new Promise<PubAck>((resolve, reject) => {
      this.#waiting.set(token, { resolve, reject, deadline });
    });
  }

  #answer(err: Error | null, msg: Msg): void {
    if (err) {
      // The subscription itself failed (a permission refused, say) and the client closed it:
      // no answer will come. The next publish subscribes again.
      this.#sub = null;
      this.#failAll(err);
      return;
    }
    const token = msg.subject.slice(this.#prefix.length);
    const w = this.#waiting.get(token);
    if (!w) return; // Timed out already, or a late duplicate.
    this.#waiting.delete(token);
    try {
      w.resolve(pubAck(msg));
    } catch (failure) {
      w.reject(failure);
    }
  }

  /** Sets the one timer to fire at `at`, replacing the one set. */
  #arm(at: number): void {
    if (this.#timer) this.clock.clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = this.clock.setTimeout(() => this.#expire(), Math.max(0, at - this.clock.now()));
    // Never what keeps a process alive (Node's timers have unref; others need none).
    (this.#timer as { unref?: () => void }).unref?.();
  }

  /** Every publish past its deadline times out; the timer is set again for the earliest left. */
  #expire(): void {
    this.#timer = null;
    this.#timerAt = Number.POSITIVE_INFINITY;
    const now = this.clock.now();
    let earliest = Number.POSITIVE_INFINITY;
    for (const [token, w] of this.#waiting) {
      if (w.deadline <= now) {
        this.#waiting.delete(token);
        w.reject(new TimeoutError());
      } else if (w.deadline < earliest) {
        earliest = w.deadline;
      }
    }
    if (earliest !== Number.POSITIVE_INFINITY) this.#arm(earliest);
  }

  #dropped(): void {
    this.#watching = null;
    this.#failAll(new LinkDownError());
  }

  #failAll(err: Error): void {
    const all = [...this.#waiting.values()];
    this.#waiting.clear();
    for (const w of all) w.reject(err);
  }
}

/** What `js.publish` makes of an answer: the PubAck, or the server's error. */
function pubAck(msg: Msg): PubAck {
  if (msg.data.length === 0 && msg.headers?.code === 503) throw new NoResponderError();
  const answer = JSON.parse(utf8.decode(msg.data)) as Partial<PubAck> & {
    error?: ConstructorParameters<typeof JetStreamApiError>[0];
  };
  if (answer.error) throw new JetStreamApiError(answer.error);
  if (!answer.stream) throw new JetStreamError('invalid ack response');
  answer.duplicate ??= false;
  return answer as PubAck;
}

const inboxes = new WeakMap<NatsConnection, AckInbox>();

/**
 * Publishes `data` to `subject` with `headers` and waits at most `timeoutMs` for its PubAck,
 * on `nc`'s journal inbox. The first publish on a connection makes its inbox, timed by `clock`
 * (tests pass a manual one).
 */
export function publishForAck(
  nc: NatsConnection,
  subject: string,
  data: Uint8Array,
  headers: MsgHdrs,
  timeoutMs: number,
  clock: Clock = systemClock,
): Promise<PubAck> {
  let inbox = inboxes.get(nc);
  if (!inbox) {
    inbox = new AckInbox(nc, clock);
    inboxes.set(nc, inbox);
  }
  return inbox.publish(subject, data, headers, timeoutMs);
}
