/**
 * The single source of Leasehold's DDL. `drizzle-kit generate` turns this file into the
 * migrations under `drizzle/`; never edit those by hand (a test checks for drift).
 *
 * Times are `timestamptz` read in `string` mode: Postgres keeps microseconds and a JS `Date`
 * keeps milliseconds, and lease proofs and heartbeat echoes are compared by equality, so a
 * stamp must never pass through `Date` (spec/queue.md Appendix B). The queue's hot-path SQL
 * renders stamps itself (see `queue/sql.ts`); these column modes only matter for plain CRUD.
 */
import { sql } from 'drizzle-orm';
import {
  check,
  foreignKey,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  unique,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import { WORK_KINDS, WORK_LANES, WORK_STATES } from '../queue/types.js';

const stamp = (name: string) => timestamp(name, { withTimezone: true, mode: 'string' });

/** Where an environment's sandboxes live: `cloud` (platform executor) or `self_hosted` (BYOC). */
export const ENVIRONMENT_KINDS = ['cloud', 'self_hosted'] as const;

export const environments = pgTable(
  'environments',
  {
    id: text('id').primaryKey(),
    // Immutable after create: the lane of every tool_exec item is derived from it.
    kind: text('kind', { enum: ENVIRONMENT_KINDS }).notNull(),
    name: text('name').notNull(),
    description: text('description'),
    metadata: jsonb('metadata').$type<Record<string, string>>().notNull().default({}),
    config: jsonb('config').$type<{ type: string } & Record<string, unknown>>().notNull(),
    archivedAt: stamp('archived_at'),
    createdAt: stamp('created_at').notNull().defaultNow(),
    updatedAt: stamp('updated_at').notNull().defaultNow(),
  },
  (t) => [
    check('environments_kind_check', sql`${t.kind} IN ('cloud', 'self_hosted')`),
    // The config's discriminator and the kind column can never disagree.
    check('environments_config_type_check', sql`(${t.config} ->> 'type') IS NOT DISTINCT FROM ${t.kind}`),
  ],
);

export const sessions = pgTable(
  'sessions',
  {
    // Opaque, minted by the platform (1–128 of [A-Za-z0-9_-]).
    id: text('id').primaryKey(),
    // A session is bound to one environment for life; no cascade, so an environment with
    // sessions cannot be deleted out from under them.
    environmentId: text('environment_id')
      .notNull()
      .references(() => environments.id),
    createdAt: stamp('created_at').notNull().defaultNow(),
  },
  (t) => [
    index('sessions_environment_idx').on(t.environmentId),
    // Target of work_items' composite foreign key: an item's (session, environment) pair
    // must be the session's own binding.
    unique('sessions_id_environment_key').on(t.id, t.environmentId),
  ],
);

export const workItems = pgTable(
  'work_items',
  {
    id: text('id').primaryKey(),
    orgId: text('org_id').notNull().default('default'),
    workspaceId: text('workspace_id').notNull().default('default'),
    projectId: text('project_id').notNull().default('default'),
    // No foreign key of its own: the (session, environment) pair below already names a
    // session bound to an existing environment, and a second check on every insert is the
    // largest single cost of a batch enqueue.
    environmentId: text('environment_id').notNull(),
    sessionId: text('session_id').notNull(),
    kind: text('kind', { enum: WORK_KINDS }).notNull(),
    // Which lane may take the item, fixed at enqueue: `poll` for a tool_exec item of a
    // self_hosted environment, `claim` for everything else. Environment kinds are
    // immutable, so this is a denormalised copy that keeps the environments join off the
    // claim and poll hot paths and lets each lane have its own partial index.
    lane: text('lane', { enum: WORK_LANES }).notNull(),
    state: text('state', { enum: WORK_STATES }).notNull().default('queued'),
    // The lease (claim lane), the poll reservation, the startup lease or the heartbeat
    // lease (poll lane). Its exact value is the holder's proof.
    leaseExpiresAt: stamp('lease_expires_at'),
    lastHeartbeat: stamp('last_heartbeat'),
    metadata: jsonb('metadata').$type<Record<string, string>>().notNull().default({}),
    // How many times the item has been handed out (claim or poll): the attempt number.
    claims: integer('claims').notNull().default(0),
    createdAt: stamp('created_at').notNull().defaultNow(),
    updatedAt: stamp('updated_at').notNull().defaultNow(),
    acknowledgedAt: stamp('acknowledged_at'),
    startedAt: stamp('started_at'),
    stopRequestedAt: stamp('stop_requested_at'),
    stoppedAt: stamp('stopped_at'),
    // W3C carrier {traceparent, tracestate?} captured at enqueue; NULL when there was no span.
    traceContext: jsonb('trace_context').$type<Record<string, string>>(),
    // Heartbeats accepted from the item's current holder (the first one included); back to 0
    // when the item is handed out again. For operators: the wire does not show it. Declared
    // last because the migration that added it appends it.
    heartbeats: integer('heartbeats').notNull().default(0),
  },
  (t) => [
    check(
      'work_items_kind_check',
      sql`${t.kind} IN ('model_turn', 'tool_exec', 'web_exec', 'outputs_harvest', 'mcp_exec')`,
    ),
    check(
      'work_items_state_check',
      sql`${t.state} IN ('queued', 'starting', 'active', 'stopping', 'stopped')`,
    ),
    check('work_items_lane_check', sql`${t.lane} IN ('claim', 'poll')`),
    // Deleting a session deletes its work; the pair must match the session's binding.
    foreignKey({
      name: 'work_items_session_fk',
      columns: [t.sessionId, t.environmentId],
      foreignColumns: [sessions.id, sessions.environmentId],
    }).onDelete('cascade'),
    // The live slot: at most one queued/starting/active item per (session, kind). Enqueue
    // is idempotent on it. stopping and stopped do not hold the slot, so a session can be
    // re-armed while an old item winds down.
    uniqueIndex('work_items_live_slot_key')
      .on(t.sessionId, t.kind)
      .where(sql`${t.state} IN ('queued', 'starting', 'active')`),
    // Claim lane: oldest first per kind, over the rows a claim may take.
    index('work_items_claim_idx')
      .on(t.kind, t.createdAt)
      .where(sql`${t.lane} = 'claim' AND ${t.state} IN ('queued', 'active')`),
    // Poll lane: oldest first per environment, over the rows a poll may take.
    index('work_items_poll_idx')
      .on(t.environmentId, t.createdAt)
      .where(sql`${t.lane} = 'poll' AND ${t.state} IN ('queued', 'starting', 'active')`),
    // Abandoned wind-downs are found per environment (poll) and globally (housekeeping).
    index('work_items_stopping_idx').on(t.environmentId).where(sql`${t.state} = 'stopping'`),
    // The work API's list: newest first by (created_at, id) within an environment.
    index('work_items_list_idx')
      .on(t.environmentId, t.createdAt.desc(), t.id.desc())
      .where(sql`${t.lane} = 'poll'`),
    index('work_items_session_idx').on(t.sessionId),
  ],
);

export const workerPolls = pgTable(
  'worker_polls',
  {
    environmentId: text('environment_id')
      .notNull()
      .references(() => environments.id, { onDelete: 'cascade' }),
    workerId: text('worker_id').notNull(),
    lastPolledAt: stamp('last_polled_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.environmentId, t.workerId] })],
);

/**
 * Per-environment queue samples, one row per environment per minute, written by housekeeping
 * (`queue/samples.ts`) and pruned after about an hour: the history an operator console charts.
 * Kept in a table rather than in memory because a Worker holds nothing between requests.
 */
export const queueSamples = pgTable(
  'queue_samples',
  {
    environmentId: text('environment_id')
      .notNull()
      .references(() => environments.id, { onDelete: 'cascade' }),
    // date_trunc('minute', now()) of the sample: the key that bounds the table.
    minute: stamp('minute').notNull(),
    depth: integer('depth').notNull(),
    pending: integer('pending').notNull(),
    workersPolling: integer('workers_polling').notNull(),
    claimQueued: integer('claim_queued').notNull(),
    oldestQueuedAt: stamp('oldest_queued_at'),
  },
  (t) => [primaryKey({ columns: [t.environmentId, t.minute] })],
);

/** Environment keys: the data-plane credential of one environment's workers. */
export const environmentKeys = pgTable(
  'environment_keys',
  {
    id: text('id').primaryKey(),
    environmentId: text('environment_id')
      .notNull()
      .references(() => environments.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    // Lowercase hex SHA-256 of the whole secret; the secret itself is never stored.
    keyHash: text('key_hash').notNull().unique('environment_keys_key_hash_key'),
    createdAt: stamp('created_at').notNull().defaultNow(),
    expiresAt: stamp('expires_at'),
    revokedAt: stamp('revoked_at'),
  },
  (t) => [index('environment_keys_environment_idx').on(t.environmentId)],
);

export const API_KEY_SCOPES = ['admin', 'platform'] as const;

/** API keys: `admin` (management, everything) or `platform` (the platform lane). */
export const apiKeys = pgTable(
  'api_keys',
  {
    id: text('id').primaryKey(),
    name: text('name').notNull(),
    scope: text('scope', { enum: API_KEY_SCOPES }).notNull(),
    keyHash: text('key_hash').notNull().unique('api_keys_key_hash_key'),
    // `config`: the admin key given by LEASEHOLD_ADMIN_KEY, replaced when the setting changes.
    source: text('source', { enum: ['config', 'api'] })
      .notNull()
      .default('api'),
    createdAt: stamp('created_at').notNull().defaultNow(),
    expiresAt: stamp('expires_at'),
    revokedAt: stamp('revoked_at'),
  },
  (t) => [
    check('api_keys_scope_check', sql`${t.scope} IN ('admin', 'platform')`),
    check('api_keys_source_check', sql`${t.source} IN ('config', 'api')`),
  ],
);
