/**
 * Whether the NATS connection under the journal is up, so a journal call fails at once while
 * it is not instead of waiting for an answer that cannot come.
 *
 * Why: the NATS client never refuses a request on a dropped connection. It keeps reconnecting,
 * holds what is sent meanwhile in its outbound buffer (which the handshake of a reconnect may
 * still flush), and the caller waits out the request timeout — for an append, once per
 * identical resend. A durable turn that waits like that holds its lease doing nothing; failing
 * fast hands the step to the next claimant, who resumes it from the journal.
 *
 * Glossary:
 * - link: the up/down state of one connection, learnt from its public status stream
 *   (`disconnect` → down, `reconnect` → up, `close` or the stream ending → down for good).
 *   `connectJournal` starts watching as soon as it connects, so no drop is missed; a
 *   connection made elsewhere is watched from the first journal call that meets it.
 * - the JetStream client keeps its connection as `nc` (nats.js `JetStreamClientImpl`); a
 *   client without one is not watched, and only timeouts bound its calls.
 */
import { JetStreamApiError, type JetStreamClient } from '@nats-io/jetstream';
import {
  ClosedConnectionError,
  ConnectionError,
  type NatsConnection,
  RequestError,
  TimeoutError,
} from '@nats-io/nats-core';
import { JournalUnavailableError } from './errors.js';

/** One caller waiting for the link to drop, in the link's list until it drops or the caller goes. */
interface DownWaiter {
  down(): void;
  prev: DownWaiter | null;
  next: DownWaiter | null;
}

class Link {
  up: boolean;
  /**
   * The waiters, as a list threaded through them: every read adds one and takes it off when its
   * answer comes (appends wait on their connection's inbox, acks.ts, which holds one for all).
   * With a Set of callbacks (and a cancel closure per call) the writers spent ≈ 7 µs more CPU an
   * append than raw publishes; with this list ≈ 2 µs (docs/benchmarks.md).
   */
  #head: DownWaiter | null = null;

  constructor(nc: NatsConnection) {
    this.up = !nc.isClosed();
    if (this.up) void this.#watch(nc);
  }

  async #watch(nc: NatsConnection): Promise<void> {
    try {
      for await (const s of nc.status()) {
        if (s.type === 'disconnect' || s.type === 'close') this.#set(false);
        else if (s.type === 'reconnect') this.#set(true);
      }
    } catch {
      // A status stream that fails tells nothing more; the connection is treated as gone.
    }
    // The stream ends only when the connection closes, and a closed one never comes back.
    this.#set(false);
  }

  #set(up: boolean): void {
    this.up = up;
    if (up) return;
    // One at a time off the head, so a waiter that one of these calls releases is not told.
    for (let w = this.#head; w; w = this.#head) {
      this.release(w);
      w.down();
    }
  }

  /** Calls `w.down()` once when the link next goes down, unless `release(w)` comes first. */
  hold(w: DownWaiter): void {
    w.prev = null;
    w.next = this.#head;
    if (this.#head) this.#head.prev = w;
    this.#head = w;
  }

  /** Takes `w` off the list (a no-op once the drop has notified it). */
  release(w: DownWaiter): void {
    if (w.prev) w.prev.next = w.next;
    else if (this.#head === w) this.#head = w.next;
    if (w.next) w.next.prev = w.prev;
    w.prev = null;
    w.next = null;
  }

  /** Calls `notify` once when the link next goes down; returns the cancel. */
  onDown(notify: () => void): () => void {
    const w: DownWaiter = { down: notify, prev: null, next: null };
    this.hold(w);
    return () => this.release(w);
  }
}

const links = new WeakMap<NatsConnection, Link>();

/** Starts watching a connection's link (idempotent); connectJournal calls it on connect. */
export function watchLink(nc: NatsConnection): void {
  if (!links.has(nc)) links.set(nc, new Link(nc));
}

/** The connection itself, or the one under a JetStream client (nats.js keeps it as `nc`). */
export function connectionOf(js: JetStreamClient | NatsConnection): NatsConnection | null {
  return isConnection(js) ? js : 'nc' in js && isConnection(js.nc) ? js.nc : null;
}

function linkOf(js: JetStreamClient | NatsConnection): Link | null {
  const nc = connectionOf(js);
  if (!nc) return null;
  watchLink(nc);
  return links.get(nc)!;
}

/** A connection is what has a status stream; a JetStream client has none of its own. */
function isConnection(x: unknown): x is NatsConnection {
  return typeof x === 'object' && x !== null && 'status' in x && typeof x.status === 'function';
}

/** False only when the connection is known to be down right now. */
export function linkUp(js: JetStreamClient | NatsConnection): boolean {
  return linkOf(js)?.up ?? true;
}

/** Calls `notify` once when the link next goes down; returns the cancel. */
export function onLinkDown(js: JetStreamClient | NatsConnection, notify: () => void): () => void {
  return linkOf(js)?.onDown(notify) ?? (() => {});
}

/** The link dropped while a call was waiting for its answer. */
export class LinkDownError extends Error {
  constructor() {
    super('the NATS connection dropped while waiting for an answer');
    this.name = 'LinkDownError';
  }
}

/** A wait that fails with `LinkDownError` when the link drops (a class: no closure per call). */
class UntilDown implements DownWaiter {
  prev: DownWaiter | null = null;
  next: DownWaiter | null = null;
  constructor(private readonly reject: (err: unknown) => void) {}
  down(): void {
    this.reject(new LinkDownError());
  }
}

/**
 * Waits for `op` but gives up the moment the link goes down (with `LinkDownError`): an answer
 * to a request sent on a dropped connection never arrives.
 */
export function untilLinkDown<T>(js: JetStreamClient | NatsConnection, op: Promise<T>): Promise<T> {
  const link = linkOf(js);
  if (!link) return op;
  // One promise settled by whichever comes first: a journal append pays this on every publish,
  // so no race of promises built for the purpose. `op` settling late is handled, never unhandled.
  return new Promise<T>((resolve, reject) => {
    const w = new UntilDown(reject);
    link.hold(w);
    op.then(
      (value) => {
        link.release(w);
        resolve(value);
      },
      (err: unknown) => {
        link.release(w);
        reject(err);
      },
    );
  });
}

/**
 * A read (or any request that changes nothing) while the link is down fails at once with
 * `JournalUnavailableError`, and so does one whose answer the link's drop, a timeout or a closed
 * connection took away; every other outcome is `op`'s own.
 */
export async function readWhileLinkUp<T>(
  js: JetStreamClient | NatsConnection,
  what: string,
  op: () => Promise<T>,
): Promise<T> {
  if (!linkUp(js)) throw new JournalUnavailableError(`${what}: the NATS connection is down`);
  try {
    return await untilLinkDown(js, op());
  } catch (err) {
    if (isUnavailable(err)) {
      throw new JournalUnavailableError(`${what}: ${(err as Error).message}`, { cause: err });
    }
    throw err;
  }
}

/**
 * A failure that says only "not now": no answer came (the link, not the request, failed), or
 * the cluster said it cannot serve the request yet (`isClusterNotNow`).
 */
export function isUnavailable(err: unknown): boolean {
  if (err instanceof LinkDownError || err instanceof TimeoutError) return true;
  if (err instanceof ConnectionError || err instanceof ClosedConnectionError) return true;
  if (isClusterNotNow(err)) return true;
  return err instanceof RequestError && !err.isNoResponders();
}

/** 10008 "JetStream system temporarily unavailable"; 10163 (2.11.0 on) "expected last sequence per subject temporarily unavailable". */
const NOT_NOW_CODES: ReadonlySet<number> = new Set([10008, 10163]);

/**
 * A cluster's 503 answers that pass once it has its leaders again: no metadata or stream leader
 * yet (10008), a new stream leader still applying its log (10163), or a leader that could not
 * propose the write to its peers (a 503 without a code of its own). Not every 503 — a full
 * stream is one too (10077), and waiting does not empty it.
 */
export function isClusterNotNow(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.status === 503 && (!err.code || NOT_NOW_CODES.has(err.code));
}
