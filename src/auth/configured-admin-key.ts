/**
 * LEASEHOLD_ADMIN_KEY where there is no start-up to ensure it at. The Node server ensures the
 * key once, before it listens; a Worker isolate has no such moment, so the app ensures it
 * before the first credential it resolves and remembers that it did: once an isolate has
 * resolved it, no request pays a statement for it again.
 *
 * What is remembered is the value ensured: the very setting the host holds for the life of
 * the process or isolate, so keeping it exposes nothing new. It is compared as it is, not in
 * constant time like the secrets a caller presents: both sides come from the configuration,
 * so no caller can time the comparison against a value of their choosing. (Hashing the value
 * on every authenticated request and comparing digests in constant time had cost about 3 µs
 * a request.) A different value is ensured again (retiring the earlier value's key, as a
 * changed setting does on Node). A failed ensure is not remembered, so the next request
 * tries again.
 *
 * A value that a newer one has replaced stays revoked (see `ensureConfiguredAdminKey`): the
 * isolate remembers it like any other, and the ensure that finds it so logs
 * `ADMIN_KEY_REPLACED`, since that key will not authenticate until the isolate is given the
 * current value.
 *
 * Requests that arrive before the first ensure has finished each run their own rather than
 * wait on it: the statement is idempotent, and on Workers a database connection belongs to the
 * request that opened it — a request awaiting another's would hang if that one were cancelled.
 */
import type { SqlHandle } from '../db/handle.js';
import { ensureConfiguredAdminKey } from './credentials.js';

/** Logged where a host is still configured with an admin key that a newer value has replaced. */
export const ADMIN_KEY_REPLACED =
  'LEASEHOLD_ADMIN_KEY holds a value that a newer one has replaced, so it is not a live key: configure the current value, or a fresh one to roll back';

export class ConfiguredAdminKey {
  private ensured: string | null = null;

  /** Makes `secret` a live admin key unless this object already did; says on `log` if it cannot. */
  async ensure(db: SqlHandle, secret: string, log: { warn(message: string): void } = console): Promise<void> {
    if (secret === this.ensured) return;
    const live = await ensureConfiguredAdminKey(db, secret);
    this.ensured = secret;
    if (!live) log.warn(ADMIN_KEY_REPLACED);
  }
}
