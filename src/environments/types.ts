/**
 * Environments: where a session's tools run. Terminology — each statement lives in a file
 * named for it:
 *
 * - **kind**: `cloud` (the platform's executor runs tools) or `self_hosted` (a customer's
 *   workers poll the work API with an environment key). Fixed at create: the lane of every
 *   tool_exec item is derived from it, so `config.type` can never change.
 * - **config**: the wire's config document, stored as jsonb. Its `type` always equals the kind
 *   (a CHECK constraint holds the two together). A cloud config carries networking and
 *   package settings that Leasehold stores for the platform but does not itself enforce.
 * - **metadata**: string → string labels, capped (see `metadata.ts`).
 * - **archived**: `archived_at` is set. The environment can no longer be updated or issue
 *   new environment keys, and lists leave it out unless asked; the work API is unaffected
 *   (existing keys still authenticate and polls still serve).
 *
 * Times are database time rendered as RFC 3339 UTC strings (`ts()`), never a JS `Date`.
 */
import type { Timestamp } from '../db/time.js';
import type { EnvironmentConfig } from './config.js';

export type EnvironmentKind = EnvironmentConfig['type'];

export interface Environment {
  id: string;
  kind: EnvironmentKind;
  name: string;
  description: string | null;
  metadata: Record<string, string>;
  config: EnvironmentConfig;
  archivedAt: Timestamp | null;
  createdAt: Timestamp;
  updatedAt: Timestamp;
}

/** A keyset position: the (created_at, id) of the last environment of the previous page. */
export interface EnvironmentCursor {
  createdAt: Timestamp;
  id: string;
}
