/**
 * The single source of Leasehold's DDL. `drizzle-kit generate` turns this file into the
 * migrations under `drizzle/`; never edit those by hand (a test checks for drift).
 *
 * Times are `timestamptz` read in `string` mode: Postgres keeps microseconds and a JS `Date`
 * keeps milliseconds, and lease proofs and heartbeat echoes are compared by equality, so a
 * stamp must never pass through `Date` (docs/queue.md, "Timestamps"). The queue's hot-path SQL
 * renders stamps itself (see `db/time.ts`); these column modes only matter for plain CRUD.
 */
import { sql } from 'drizzle-orm';
import {
  type AnyPgColumn,
  boolean,
  check,
  doublePrecision,
  foreignKey,
  index,
  integer,
  jsonb,
  pgEnum,
  pgTable,
  primaryKey,
  text,
  timestamp,
  unique,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import { WORK_DATA_TYPES, WORK_KINDS, WORK_LANES, WORK_STATES } from './work-enums.js';

/**
 * Types that only check values. The enumerated text columns of the tables every enqueue,
 * claim and event append writes (work_items' kind, state and lane; a session's status) are
 * checked by a cast to one of these, not by `IN (…)`. PostgreSQL reads a table's CHECK
 * constraints back from their stored node text on every INSERT and UPDATE, and an `IN` list's
 * array constant is most of that text: the four `IN` checks and the data check took a sixth
 * of an enqueue's server time. The casts' text is a quarter as long, and they refuse the same
 * values. The columns stay text, so every statement still compares them with text.
 */
export const workKindValues = pgEnum('work_kind', WORK_KINDS);
export const workStateValues = pgEnum('work_state', WORK_STATES);
export const workLaneValues = pgEnum('work_lane', WORK_LANES);

/** `column` checked by a cast to the value type `values` (named once, by the type). */
const castCheck = (name: string, column: AnyPgColumn, values: { enumName: string }) =>
  check(name, sql`(${column})::${sql.raw(values.enumName)} IS NOT NULL`);

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

/**
 * Agents: a name, a model, a system prompt and tools, kept in numbered versions. The row holds
 * what every version shares (identity, archival, the current version); each update writes a
 * new `agent_versions` row, so a session can pin the version it was created with.
 */
export const agents = pgTable(
  'agents',
  {
    id: text('id').primaryKey(),
    // The newest version's number; `agent_versions` holds every one of them.
    version: integer('version').notNull(),
    archivedAt: stamp('archived_at'),
    createdAt: stamp('created_at').notNull().defaultNow(),
    updatedAt: stamp('updated_at').notNull().defaultNow(),
  },
  (t) => [index('agents_created_idx').on(t.createdAt.desc(), t.id.desc())],
);

export const agentVersions = pgTable(
  'agent_versions',
  {
    agentId: text('agent_id')
      .notNull()
      .references(() => agents.id, { onDelete: 'cascade' }),
    version: integer('version').notNull(),
    // The resolved definition (name, description, model, system, tools, mcp_servers, skills,
    // metadata, multiagent, execution_identity) as the wire shows it, without identity fields.
    definition: jsonb('definition').$type<Record<string, unknown>>().notNull(),
    createdAt: stamp('created_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.agentId, t.version] })],
);

export const SESSION_STATUSES = ['idle', 'running', 'rescheduling', 'terminated'] as const;
/** Checks `sessions.status` (see the value types above). */
export const sessionStatusValues = pgEnum('session_status', SESSION_STATUSES);

export const sessions = pgTable(
  'sessions',
  {
    // Opaque when the platform lane names it (1–128 of [A-Za-z0-9_-]); `sess_…` when minted
    // by POST /v1/sessions.
    id: text('id').primaryKey(),
    // A session is bound to one environment for life; no cascade, so an environment with
    // sessions cannot be deleted out from under them.
    environmentId: text('environment_id')
      .notNull()
      .references(() => environments.id),
    createdAt: stamp('created_at').notNull().defaultNow(),
    // The agent version the session runs, snapshotted whole at creation (the wire's
    // `session.agent`); NULL for a session the platform lane opened, whose brain is the
    // platform's own. agent_id/agent_version repeat it for the list's filters.
    agent: jsonb('agent').$type<Record<string, unknown>>(),
    agentId: text('agent_id'),
    agentVersion: integer('agent_version'),
    status: text('status', { enum: SESSION_STATUSES }).notNull().default('idle'),
    title: text('title'),
    metadata: jsonb('metadata').$type<Record<string, string>>().notNull().default({}),
    resources: jsonb('resources').$type<unknown[]>().notNull().default([]),
    // Cumulative model usage (input_tokens, output_tokens, cache_* …), summed by the brain.
    usage: jsonb('usage').$type<Record<string, number>>().notNull().default({}),
    // Seconds spent running, closed at each return to idle; running_since opens the current span.
    activeSeconds: doublePrecision('active_seconds').notNull().default(0),
    runningSince: stamp('running_since'),
    // The event log's head: the last sequence number and its processed_at. Appends lock this
    // row to take the next numbers, so a session's sequence has no gaps and processed_at
    // never decreases along it.
    lastSeq: integer('last_seq').notNull().default(0),
    lastEventAt: stamp('last_event_at'),
    archivedAt: stamp('archived_at'),
    updatedAt: stamp('updated_at').notNull().defaultNow(),
    // A platform-lane session's last work item was deleted by the stopped-work retention at
    // this time (NULL while it has items, or never had its last one retired). Housekeeping
    // deletes the session a retention after it; an enqueue in between is found then and
    // clears it. Set only off the hot path: enqueues never write it.
    emptiedAt: stamp('emptied_at'),
  },
  (t) => [
    index('sessions_environment_idx').on(t.environmentId),
    // Target of work_items' composite foreign key: an item's (session, environment) pair
    // must be the session's own binding.
    unique('sessions_id_environment_key').on(t.id, t.environmentId),
    // The sessions list: newest first by (created_at, id), over the sessions the API made.
    index('sessions_list_idx').on(t.createdAt.desc(), t.id.desc()).where(sql`${t.agent} IS NOT NULL`),
    // Housekeeping's retention of archived sessions: the oldest archived first.
    index('sessions_archived_idx').on(t.archivedAt).where(sql`${t.archivedAt} IS NOT NULL`),
    // And of emptied platform-lane sessions: the longest emptied first.
    index('sessions_emptied_idx').on(t.emptiedAt).where(sql`${t.emptiedAt} IS NOT NULL`),
    castCheck('sessions_status_check', t.status, sessionStatusValues),
  ],
);

/**
 * A session's event log: append-only, numbered 1, 2, 3 … per session without gaps. `body`
 * holds the event's own fields (everything but id, type and processed_at). `turn` is internal:
 * the brain's turn (its journal iteration) whose model response an agent event projects, so
 * the next request can put that response back whole (thinking blocks included).
 */
export const sessionEvents = pgTable(
  'session_events',
  {
    sessionId: text('session_id')
      .notNull()
      .references(() => sessions.id, { onDelete: 'cascade' }),
    seq: integer('seq').notNull(),
    id: text('id').notNull(),
    type: text('type').notNull(),
    body: jsonb('body').$type<Record<string, unknown>>().notNull(),
    processedAt: stamp('processed_at').notNull(),
    turn: integer('turn'),
  },
  (t) => [
    primaryKey({ columns: [t.sessionId, t.seq] }),
    unique('session_events_id_key').on(t.id),
    index('session_events_type_idx').on(t.sessionId, t.type, t.seq),
  ],
);

/**
 * The tool calls of a session's agent and their answers: one row per `agent.tool_use` /
 * `agent.custom_tool_use`, answered by the first result (or synthetic error) for it. Kept so
 * that a result is matched to its call, a duplicate told from a conflict, the unanswered
 * calls named in `requires_action`, and a call's deliveries to workers bounded.
 */
export const sessionToolCalls = pgTable(
  'session_tool_calls',
  {
    sessionId: text('session_id')
      .notNull()
      .references(() => sessions.id, { onDelete: 'cascade' }),
    // The agent event's id: what a result names in tool_use_id / custom_tool_use_id.
    eventId: text('event_id').notNull(),
    // The model's own tool_use id, for the tool_result blocks of the next request.
    modelToolUseId: text('model_tool_use_id').notNull(),
    custom: boolean('custom').notNull(),
    name: text('name').notNull(),
    requestedSeq: integer('requested_seq').notNull(),
    // The answering event; its content for comparing a repeated answer.
    answeredSeq: integer('answered_seq'),
    answer: jsonb('answer').$type<Record<string, unknown>>(),
    // Times a fresh work item was armed for the call after the first (re-arms and re-offers).
    rearms: integer('rearms').notNull().default(0),
  },
  (t) => [
    primaryKey({ columns: [t.sessionId, t.eventId] }),
    index('session_tool_calls_open_idx').on(t.sessionId).where(sql`${t.answeredSeq} IS NULL`),
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
    // The session the item works for; NULL exactly when the item is a healthcheck (see
    // data_type below), which belongs to its environment and binds no session.
    sessionId: text('session_id'),
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
    // What the item is for, as the wire's `data.type` says: `session` (work for session_id)
    // or `healthcheck` (a probe of the environment's workers, its own id in healthcheck_id).
    // These three are declared last because the migration that added them appends them.
    dataType: text('data_type', { enum: WORK_DATA_TYPES }).notNull().default('session'),
    healthcheckId: text('healthcheck_id'),
    // A healthcheck's environment_id again, NULL on every session item. A healthcheck has no
    // session to tie it to its environment, so its foreign key ties it: deleting the
    // environment deletes its healthchecks. NULL on session items, so their inserts check no
    // key here. A plain column (the data check keeps it equal), not a generated one, so that
    // adding it did not rewrite the table.
    healthcheckEnvironmentId: text('healthcheck_environment_id'),
  },
  (t) => [
    castCheck('work_items_kind_check', t.kind, workKindValues),
    castCheck('work_items_state_check', t.state, workStateValues),
    castCheck('work_items_lane_check', t.lane, workLaneValues),
    // A session's item has a session and nothing of a healthcheck; a healthcheck has its own
    // id, its environment again, no session, and is a tool_exec item of the poll lane (it
    // probes the workers that poll).
    check(
      'work_items_data_check',
      sql`(${t.dataType} = 'session' AND ${t.sessionId} IS NOT NULL AND ${t.healthcheckId} IS NULL
           AND ${t.healthcheckEnvironmentId} IS NULL)
       OR (${t.dataType} = 'healthcheck' AND ${t.sessionId} IS NULL AND ${t.healthcheckId} IS NOT NULL
           AND ${t.healthcheckEnvironmentId} = ${t.environmentId} AND ${t.kind} = 'tool_exec'
           AND ${t.lane} = 'poll')`,
    ),
    // Deleting a session deletes its work; the pair must match the session's binding.
    foreignKey({
      name: 'work_items_session_fk',
      columns: [t.sessionId, t.environmentId],
      foreignColumns: [sessions.id, sessions.environmentId],
    }).onDelete('cascade'),
    // Deleting an environment deletes its healthchecks (session items go with their sessions).
    foreignKey({
      name: 'work_items_healthcheck_environment_fk',
      columns: [t.healthcheckEnvironmentId],
      foreignColumns: [environments.id],
    }).onDelete('cascade'),
    // The live slot: at most one queued/starting/active item per (session, kind). Enqueue
    // is idempotent on it. stopping and stopped do not hold the slot, so a session can be
    // re-armed while an old item winds down.
    uniqueIndex('work_items_live_slot_key')
      .on(t.sessionId, t.kind)
      .where(sql`${t.state} IN ('queued', 'starting', 'active')`),
    // Claim lane: queued items oldest first per kind; held ones by lease, so a claim finds
    // the lapsed ones without stepping past every item in flight (queue/sql.ts pickClaimable).
    index('work_items_claim_queued_idx')
      .on(t.kind, t.createdAt)
      .where(sql`${t.lane} = 'claim' AND ${t.state} = 'queued'`),
    index('work_items_claim_lease_idx')
      .on(t.kind, t.leaseExpiresAt)
      .where(sql`${t.lane} = 'claim' AND ${t.state} = 'active'`),
    // Poll lane, the same split per environment: queued items oldest first (a reservation
    // stays queued), started and running ones by lease (queue/sql.ts pickPollable).
    index('work_items_poll_queued_idx')
      .on(t.environmentId, t.createdAt)
      .where(sql`${t.lane} = 'poll' AND ${t.state} = 'queued'`),
    index('work_items_poll_lease_idx')
      .on(t.environmentId, t.leaseExpiresAt)
      .where(sql`${t.lane} = 'poll' AND ${t.state} IN ('starting', 'active')`),
    // Abandoned wind-downs are found per environment (poll) and globally (housekeeping).
    index('work_items_stopping_idx').on(t.environmentId).where(sql`${t.state} = 'stopping'`),
    // The work API's list: newest first by (created_at, id) within an environment.
    index('work_items_list_idx')
      .on(t.environmentId, t.createdAt.desc(), t.id.desc())
      .where(sql`${t.lane} = 'poll'`),
    index('work_items_session_idx').on(t.sessionId),
    // Housekeeping's retention of stopped items: the longest stopped first, without a scan.
    index('work_items_stopped_idx').on(t.stoppedAt).where(sql`${t.state} = 'stopped'`),
    // At most one live healthcheck per environment: asking for one while one is live returns it.
    uniqueIndex('work_items_live_healthcheck_key')
      .on(t.environmentId)
      .where(sql`${t.dataType} = 'healthcheck' AND ${t.state} IN ('queued', 'starting', 'active')`),
    // An environment's healthchecks: its last answered one, and the cascade when it is deleted.
    index('work_items_healthcheck_idx')
      .on(t.healthcheckEnvironmentId, t.acknowledgedAt)
      .where(sql`${t.healthcheckEnvironmentId} IS NOT NULL`),
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

/**
 * Journal runs to purge: one row per deleted session (run = session in the journal), written
 * by the statement that deletes it, so a purge is never lost to a crash or a NATS outage
 * between the two stores. Housekeeping purges each after a grace and then deletes the row.
 */
export const journalPurges = pgTable('journal_purges', {
  runId: text('run_id').primaryKey(),
  requestedAt: stamp('requested_at').notNull().defaultNow(),
  // A housekeeping run's hold on the row while it purges; another run takes it once it lapses.
  claimedUntil: stamp('claimed_until'),
});

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
