/**
 * The isolation matrix's world: an "own" and a "foreign" self_hosted environment built
 * alike — named, described and labelled with tokens found nowhere else, three sessions, poll
 * lane items at three points of their life, a claimed claim-lane item, and environment keys
 * live, revoked, expired and spare — plus API keys of both scopes in the same three states.
 * Everything the foreign side holds is collected, so every answer can be searched for it.
 *
 * Revoked and expired keys are made so in SQL before the app ever sees them (time moves by
 * backdating `expires_at`), so no credential cache can remember them as live.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { createAgent } from '../../../src/agents/index.js';
import { issueApiKey, issueEnvironmentKey } from '../../../src/auth/credentials.js';
import { maybeRow, type SqlHandle } from '../../../src/db/handle.js';
import { newId } from '../../../src/ids.js';
import { claim, enqueue } from '../../../src/queue/index.js';
import { createSession } from '../../../src/sessions/index.js';
import { wireWork } from '../../helpers/factories.js';

export interface Key {
  id: string;
  name: string;
  secret: string;
}

export interface Side {
  environmentId: string;
  name: string;
  description: string;
  metadataValue: string;
  sessionIds: [string, string, string];
  /** A session made through the sessions API (it runs an agent): what the session routes serve. */
  apiSessionId: string;
  /** Polled, not acked (the ack route's item). */
  reservedId: string;
  /** Acked and heartbeating, with the heartbeat a worker echoes next. */
  activeId: string;
  activeHeartbeat: string;
  /** Queued on the poll lane: what a poll hands out. */
  queuedId: string;
  /** A claimed model_turn: the claim lane, never visible on the wire; its lease is the proof. */
  claimedId: string;
  claimedLease: string;
  itemMetadataValue: string;
  key: Key;
  revokedKey: Key;
  expiredKey: Key;
  /** A live key no probe presents, for the revoke route to revoke. */
  spareKey: Key;
}

export interface World {
  own: Side;
  foreign: Side;
  admin: { live: Key; revoked: Key; expired: Key };
  platform: { live: Key; revoked: Key; expired: Key; spare: Key };
  /** A queued web_exec of the own side: the only item the platform lane's claim can take. */
  claimableId: string;
  /** An agent at version 2: agents belong to no environment, so every API key sees it. */
  agentId: string;
  missing: { work: string; env: string; envkey: string; apikey: string; session: string; agent: string };
}

const token = () => randomBytes(6).toString('hex');

export async function seedWorld(db: SqlHandle): Promise<World> {
  const own = await seedSide(db, 'own');
  const foreign = await seedSide(db, 'foreign');
  const { work } = await enqueue(db, {
    environmentId: own.environmentId,
    sessionId: own.sessionIds[2],
    kind: 'web_exec',
  });
  const api = async (scope: 'admin' | 'platform', state: 'live' | 'revoked' | 'expired') =>
    deadened(db, 'api_keys', await issueApiKey(db, `${scope}-${state}-${token()}`, scope, null), state);
  return {
    own,
    foreign,
    admin: {
      live: await api('admin', 'live'),
      revoked: await api('admin', 'revoked'),
      expired: await api('admin', 'expired'),
    },
    platform: {
      live: await api('platform', 'live'),
      revoked: await api('platform', 'revoked'),
      expired: await api('platform', 'expired'),
      spare: await api('platform', 'live'),
    },
    claimableId: work.id,
    agentId: await seedAgent(db),
    missing: {
      work: newId('work'),
      env: newId('env'),
      envkey: newId('envkey'),
      apikey: newId('apikey'),
      session: `missing_session_${token()}`,
      agent: newId('agent'),
    },
  };
}

async function seedAgent(db: SqlHandle): Promise<string> {
  const agent = await createAgent(db, { name: `agent-${token()}`, model: 'probe-model' });
  await db.execute(sql`UPDATE agents SET version = 2 WHERE id = ${agent.id}`);
  await db.execute(
    sql`INSERT INTO agent_versions (agent_id, version, definition)
        SELECT agent_id, 2, definition || '{"system":"v2"}'::jsonb FROM agent_versions WHERE agent_id = ${agent.id}`,
  );
  return agent.id;
}

async function seedSide(db: SqlHandle, label: string): Promise<Side> {
  const environmentId = newId('env');
  const name = `${label}-env-name-${token()}`;
  const description = `${label}-env-description-${token()}`;
  const metadataValue = `${label}-env-label-${token()}`;
  await db.execute(
    sql`INSERT INTO environments (id, kind, name, description, metadata, config)
        VALUES (${environmentId}, 'self_hosted', ${name}, ${description},
                ${JSON.stringify({ owner: metadataValue })}::jsonb, '{"type":"self_hosted"}'::jsonb)`,
  );
  const sessionIds = [1, 2, 3].map((n) => `${label}_session_${n}_${token()}`) as Side['sessionIds'];
  for (const id of sessionIds)
    await db.execute(sql`INSERT INTO sessions (id, environment_id) VALUES (${id}, ${environmentId})`);
  const apiSession = await createSession(db, {
    id: newId('sess'),
    environmentId,
    agent: { type: 'agent', id: newId('agent'), version: 1, name: `${label}-agent`, tools: [] },
    title: `${label}-session-title-${token()}`,
    metadata: {},
    resources: [],
  });
  const itemMetadataValue = `${label}-item-label-${token()}`;
  const metadata = { note: itemMetadataValue };
  const at = (n: 0 | 1 | 2) => ({ environmentId, sessionId: sessionIds[n] });
  // Poll hands out the oldest available item, so the active one is driven first.
  const active = await wireWork(db, at(1), 'active', { metadata });
  const reserved = await wireWork(db, at(0), 'reserved', { metadata });
  const queued = await wireWork(db, at(2), 'queued', { metadata });
  await enqueue(db, { ...at(0), kind: 'model_turn', metadata });
  // Sides are seeded one after the other, so the only claimable model_turn is this side's.
  const claimed = await claim(db, 'model_turn', 600_000);
  if (claimed?.environmentId !== environmentId) throw new Error('seedSide: claimed another side’s item');
  const envKey = async (state: 'live' | 'revoked' | 'expired') =>
    deadened(
      db,
      'environment_keys',
      await issueEnvironmentKey(db, environmentId, `${label}-key-${state}-${token()}`, null),
      state,
    );
  return {
    environmentId,
    name,
    description,
    metadataValue,
    sessionIds,
    apiSessionId: apiSession.id,
    reservedId: reserved.id,
    activeId: active.id,
    activeHeartbeat: active.lastHeartbeat!,
    queuedId: queued.id,
    claimedId: claimed.id,
    claimedLease: claimed.lease,
    itemMetadataValue,
    key: await envKey('live'),
    revokedKey: await envKey('revoked'),
    expiredKey: await envKey('expired'),
    spareKey: await envKey('live'),
  };
}

async function deadened(
  db: SqlHandle,
  table: 'api_keys' | 'environment_keys',
  issued: { id: string; name: string; key: string },
  state: 'live' | 'revoked' | 'expired',
): Promise<Key> {
  const t = sql.raw(table);
  if (state === 'revoked') await db.execute(sql`UPDATE ${t} SET revoked_at = now() WHERE id = ${issued.id}`);
  if (state === 'expired')
    await db.execute(sql`UPDATE ${t} SET expires_at = now() - interval '1 second' WHERE id = ${issued.id}`);
  return { id: issued.id, name: issued.name, secret: issued.key };
}

/** Every string the foreign side owns: none may reach a caller who did not send it. */
export function foreignTokens(w: World): string[] {
  const f = w.foreign;
  const keys = [f.key, f.revokedKey, f.expiredKey, f.spareKey];
  return [
    f.environmentId,
    f.name,
    f.description,
    f.metadataValue,
    f.itemMetadataValue,
    ...f.sessionIds,
    f.apiSessionId,
    f.reservedId,
    f.activeId,
    f.queuedId,
    f.claimedId,
    ...keys.flatMap((k) => [k.id, k.name]),
  ];
}

/** Every secret in the world: no answer but its own issuance may ever carry one. */
export function allSecrets(w: World): string[] {
  const sides = [w.own, w.foreign].flatMap((s) => [s.key, s.revokedKey, s.expiredKey, s.spareKey]);
  return [...sides, ...Object.values(w.admin), ...Object.values(w.platform)].map((k) => k.secret);
}

const TABLES = [
  'environments',
  'sessions',
  'session_events',
  'session_tool_calls',
  'work_items',
  'environment_keys',
  'worker_polls',
  'queue_samples',
  'api_keys',
  'agents',
  'agent_versions',
];

/**
 * A digest of the rows as stored: of one environment's rows when `environmentId` is given
 * (its environment, sessions, items, keys, poll records and queue samples), else of every table.
 */
export async function fingerprint(db: SqlHandle, environmentId?: string): Promise<string> {
  const parts: string[] = [];
  for (const table of TABLES) {
    // API keys and agents belong to no environment.
    if (environmentId && ['api_keys', 'agents', 'agent_versions'].includes(table)) continue;
    // A session's log and calls are its environment's, through the session.
    const viaSession = ['session_events', 'session_tool_calls'].includes(table);
    const scope = !environmentId
      ? sql``
      : table === 'environments'
        ? sql`WHERE t.id = ${environmentId}`
        : viaSession
          ? sql`WHERE t.session_id IN (SELECT id FROM sessions WHERE environment_id = ${environmentId})`
          : sql`WHERE t.environment_id = ${environmentId}`;
    const row = await maybeRow<{ h: string }>(
      db,
      sql`SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) AS h FROM ${sql.raw(table)} t ${scope}`,
    );
    parts.push(`${table}:${row!.h}`);
  }
  return parts.join(' ');
}
