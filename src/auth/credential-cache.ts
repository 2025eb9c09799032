/**
 * A short-lived memory of resolved credentials, so a worker's every poll, ack, heartbeat and
 * stop does not pay a key lookup on top of the one statement it came for.
 *
 * Only hits are kept (an unknown secret is looked up every time), keyed by the secret's
 * digest, never the secret. An entry lives `ttlMs` at most, and never past the key's own
 * expiry. Revoking a key or deleting an environment through this app forgets its entries at
 * once; another replica (or Worker isolate) stops honouring a revoked key within `ttlMs`.
 *
 * Time here is the process's monotonic clock: it bounds how stale a memory may be, and no
 * lease or proof depends on it.
 */
import type { Principal } from './principal.js';

/** How long a resolved credential is trusted without asking the database again. */
export const CREDENTIAL_TTL_MS = 2_000;
/** Entries kept at most; beyond it the oldest go first. */
const MAX_ENTRIES = 10_000;

interface Entry {
  principal: Principal;
  until: number;
}

export class CredentialCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly ttlMs = CREDENTIAL_TTL_MS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  get(digest: string): Principal | undefined {
    const entry = this.entries.get(digest);
    if (!entry) return undefined;
    if (entry.until <= this.now()) {
      this.entries.delete(digest);
      return undefined;
    }
    return entry.principal;
  }

  /** Remembers a hit; `msLeft` is the key's remaining life (null: it does not expire). */
  set(digest: string, principal: Principal, msLeft: number | null): void {
    const life = Math.min(this.ttlMs, msLeft ?? Number.POSITIVE_INFINITY);
    if (!(life > 0)) return;
    this.entries.delete(digest);
    if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(digest, { principal, until: this.now() + life });
  }

  forgetKey(keyId: string): void {
    for (const [digest, entry] of this.entries)
      if (entry.principal.keyId === keyId) this.entries.delete(digest);
  }

  forgetEnvironment(environmentId: string): void {
    for (const [digest, entry] of this.entries) {
      const p = entry.principal;
      if (p.kind === 'environment' && p.environmentId === environmentId) this.entries.delete(digest);
    }
  }

  get size(): number {
    return this.entries.size;
  }
}
