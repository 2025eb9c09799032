/**
 * The fuzz world: what a database holds before a route is fuzzed (credentials of every lane,
 * environments, sessions, work items at each lifecycle stage, claimed leases, journal records),
 * the pools of live values requests draw from, and what the answers teach it (new leases,
 * heartbeats, cursors, ids), so valid requests keep reaching the handlers' deep paths.
 *
 * Pools: `env:work` (environments the work routes address, mostly the main one), `env:any`
 * (every environment, spares without sessions included, so deletes can succeed), `work`,
 * `work:claimed`, `session`, `apikey` and `envkey` (spare keys, never the ones the fuzz
 * authenticates with), `agent` (agents at versions 1–3, one archived), `cursor:work`,
 * `cursor:env`, `cursor:agent`, `cursor:agent-version`, `run`, `step`.
 */
import type { JetStreamClient } from '@nats-io/jetstream';
import { sql } from 'drizzle-orm';
import { archiveAgent, createAgent, updateAgent } from '../../../src/agents/index.js';
import { encodeAgentCursor, encodeVersionCursor } from '../../../src/api/routes/agents-wire.js';
import { encodeEnvironmentCursor } from '../../../src/api/routes/environment-wire.js';
import { encodeCursor } from '../../../src/api/wire.js';
import { issueApiKey, issueEnvironmentKey, revokeApiKey } from '../../../src/auth/credentials.js';
import type { Database } from '../../../src/db/handle.js';
import { ts } from '../../../src/db/time.js';
import { resolveConfig } from '../../../src/environments/index.js';
import { newId } from '../../../src/ids.js';
import { claim } from '../../../src/queue/claim.js';
import { WORK_KINDS } from '../../../src/queue/types.js';
import {
  createEnvironment,
  createSession,
  seedClaimBacklog,
  type WireStage,
  wireWork,
} from '../../helpers/factories.js';
import { rawJournal, task } from '../../helpers/raw-journal.js';
import type { AuthSpec, Resolver } from './request.js';
import { cursorPool } from './routes.js';
import type { Ref } from './schema-arbitrary.js';

/** Stages seeded on the main environment, one item each (in this order: each is polled alone). */
const STAGES: WireStage[] = [
  'stopped',
  'stopping',
  'active',
  'active',
  'starting',
  'reserved',
  'reserved',
  'queued',
];
const SPARE_ENVIRONMENTS = 12;
const SPARE_KEYS = 12;
const CLAIMED = 24;

export interface SeedOptions {
  /** Queued poll-lane items on the main environment beyond the staged ones (the poll route's supply). */
  pollBacklog?: number;
  /** Queued claim-lane items per kind. */
  claimBacklog?: number;
  /** Admin key to authenticate with; default a fresh one. */
  adminKey?: string;
  journal?: JetStreamClient;
}

export class World implements Resolver {
  readonly pools = new Map<string, string[]>();
  readonly envKeys = new Map<string, string>();
  readonly leases = new Map<string, string>();
  readonly heartbeats = new Map<string, string>();
  /** Versions-list cursors by agent: a cursor binds to the agent it was made for. */
  readonly versionCursors = new Map<string, string[]>();
  /** Every secret issued while seeding: none may ever appear in an answer. */
  readonly secrets: string[] = [];
  admin = '';
  platform = '';
  revoked = '';
  main = '';

  versionCursor(agentId: string, cursor: string): void {
    this.versionCursors.set(agentId, [...(this.versionCursors.get(agentId) ?? []), cursor]);
  }

  pool(name: string): string[] {
    const list = this.pools.get(name) ?? [];
    this.pools.set(name, list);
    return list;
  }

  add(name: string, ...values: string[]): void {
    this.pool(name).push(...values);
  }

  resolve(value: Ref, params: Record<string, string>): string {
    const workId = params.workId ?? '';
    // Mostly the proof or echo that belongs to the item in the path; now and then another's.
    if (value.pool === 'lease' && value.pick % 4 !== 0 && this.leases.has(workId))
      return this.leases.get(workId)!;
    if (value.pool === 'heartbeat' && value.pick % 4 !== 0 && this.heartbeats.has(workId)) {
      return this.heartbeats.get(workId)!;
    }
    const own = this.versionCursors.get(params.agentId ?? '');
    if (value.pool === 'cursor:agent-version' && value.pick % 4 !== 0 && own?.length)
      return own[value.pick % own.length]!;
    const source =
      value.pool === 'lease'
        ? [...this.leases.values()]
        : value.pool === 'heartbeat'
          ? [...this.heartbeats.values()]
          : this.pool(value.pool);
    if (source.length === 0) return value.pool.startsWith('cursor') ? 'djF8' : newId('work');
    return source[value.pick % source.length]!;
  }

  credential(auth: AuthSpec, params: Record<string, string>): [string, string][] {
    const proper = this.secretFor(auth.lane, params);
    if (auth.kind === 'lane') return [['authorization', `Bearer ${proper}`]];
    return badCredential(auth.variant, proper, this);
  }

  secretFor(lane: AuthSpec['lane'], params: Record<string, string>): string {
    if (lane === 'admin_api_key') return this.admin;
    if (lane === 'platform_api_key') return this.platform;
    if (lane === 'environment_key')
      return this.envKeys.get(params.environmentId ?? '') ?? this.envKeys.get(this.main)!;
    return '';
  }

  /** Takes what a successful answer names into the pools. */
  learn(route: string, params: Record<string, string>, status: number, body: unknown): void {
    if (status >= 300 || !body || typeof body !== 'object') return;
    const b = body as Record<string, unknown>;
    if (typeof b.next_page === 'string') this.add(cursorPool(route.split(' ')[1] ?? ''), b.next_page);
    if (typeof b.next_page === 'string' && route.endsWith('/versions'))
      this.versionCursor(params.agentId!, b.next_page);
    // Both answer a newly claimed item (complete_and_claim: the next one, its own id).
    if (
      (route.endsWith('/work/claim') || route.endsWith('/complete_and_claim')) &&
      typeof b.lease === 'string'
    ) {
      this.leases.set(b.id as string, b.lease);
      this.add('work:claimed', b.id as string);
    }
    if (route.endsWith('/extend') && typeof b.lease === 'string') this.leases.set(params.workId!, b.lease);
    if (route.endsWith('/heartbeat') && typeof b.last_heartbeat === 'string') {
      this.heartbeats.set(params.workId!, b.last_heartbeat);
    }
    if (route === 'POST /v1/environments' && typeof b.id === 'string') this.add('env:any', b.id);
    if (route === 'POST /v1/agents' && typeof b.id === 'string') this.add('agent', b.id);
    if (route === 'POST /v1/api_keys' && typeof b.id === 'string') this.add('apikey', b.id);
    if (route.endsWith('/keys') && route.startsWith('POST') && typeof b.id === 'string')
      this.add('envkey', b.id);
    const work = b.work as { id?: string } | undefined;
    if (typeof work?.id === 'string') this.add('work', work.id);
  }
}

/** A credential that should not get through, by name; the proper secret is the raw material. */
function badCredential(variant: string, proper: string, world: World): [string, string][] {
  switch (variant) {
    case 'missing':
      return [];
    case 'empty-bearer':
      return [['authorization', 'Bearer ']];
    case 'lowercase-scheme':
      return [['authorization', `bearer ${proper}`]];
    case 'basic':
      return [['authorization', `Basic ${Buffer.from(`${proper}:`).toString('base64')}`]];
    case 'duplicated':
      return [
        ['authorization', `Bearer ${proper}`],
        ['authorization', `Bearer ${proper}`],
      ];
    case 'duplicated-differing':
      return [
        ['authorization', `Bearer ${proper}`],
        ['authorization', `Bearer ${world.revoked}`],
      ];
    case 'x-api-key-list':
      return [['x-api-key', `${proper}, ${world.admin}`]];
    case 'both-headers-differ':
      return [
        ['authorization', `Bearer ${world.revoked}`],
        ['x-api-key', proper],
      ];
    case 'revoked':
      return [['authorization', `Bearer ${world.revoked}`]];
    case 'truncated':
      return [['authorization', `Bearer ${proper.slice(0, -1)}`]];
    case 'padded':
      return [['authorization', `Bearer ${proper}x`]];
    case 'huge':
      return [['authorization', `Bearer ${'A'.repeat(64 * 1024)}`]];
    case 'latin1':
      return [['authorization', `Bearer ${proper}\u00ff\u00e9`]];
    case 'sql':
      return [['authorization', "Bearer ' OR '1'='1"]];
    case 'other-environment':
      return [['authorization', `Bearer ${[...world.envKeys.values()].find((k) => k !== proper) ?? proper}`]];
    case 'wrong-lane':
      return [
        [
          'authorization',
          `Bearer ${proper === world.admin ? world.envKeys.get(world.main) : world.platform}`,
        ],
      ];
    default:
      return [['authorization', `Bearer ${variant}`]];
  }
}

export const BAD_CREDENTIALS = [
  'missing',
  'empty-bearer',
  'lowercase-scheme',
  'basic',
  'duplicated',
  'duplicated-differing',
  'x-api-key-list',
  'both-headers-differ',
  'revoked',
  'truncated',
  'padded',
  'huge',
  'latin1',
  'sql',
  'other-environment',
  'wrong-lane',
];

/** Seeds a fresh (just emptied) database and returns the world over it. */
export async function seedWorld(db: Database, options: SeedOptions = {}): Promise<World> {
  const w = new World();
  w.admin = options.adminKey ?? (await issueApiKey(db, 'fuzz admin', 'admin', null)).key;
  w.platform = (await issueApiKey(db, 'fuzz platform', 'platform', null)).key;
  const revoked = await issueApiKey(db, 'fuzz revoked', 'admin', null);
  await revokeApiKey(db, revoked.id);
  w.revoked = revoked.key;

  const environment = async (kind: 'self_hosted' | 'cloud', sessions: number) => {
    const id = await createEnvironment(db, kind);
    const key = await issueEnvironmentKey(db, id, 'fuzz worker', null);
    w.envKeys.set(id, key.key);
    for (let i = 0; i < sessions; i++) w.add('session', await createSession(db, id));
    return id;
  };
  w.main = await environment('self_hosted', 0);
  const other = await environment('self_hosted', 1);
  const cloud = await environment('cloud', 2);
  const archived = await environment('self_hosted', 1);
  await db.execute(sql`UPDATE environments SET archived_at = now() WHERE id = ${archived}`);
  w.add('env:work', w.main, w.main, w.main, w.main, other, cloud, archived);
  w.add('env:any', w.main, other, cloud, archived);
  for (let i = 0; i < SPARE_ENVIRONMENTS; i++)
    w.add('env:any', await createEnvironment(db, i % 2 ? 'cloud' : 'self_hosted'));

  for (const stage of STAGES) {
    const sessionId = await createSession(db, w.main);
    w.add('session', sessionId);
    const item = await wireWork(db, { environmentId: w.main, sessionId }, stage, { metadata: { stage } });
    w.add('work', item.id);
    if (item.lastHeartbeat) w.heartbeats.set(item.id, item.lastHeartbeat);
  }
  const foreign = await wireWork(db, { environmentId: other, sessionId: w.pool('session')[0]! }, 'queued');
  w.add('work', foreign.id);
  await backlog(db, w.main, options.pollBacklog ?? 20);

  for (let i = 0; i < SPARE_KEYS; i++) {
    w.add('apikey', (await issueApiKey(db, `spare ${i}`, 'platform', null)).id);
    w.add('envkey', (await issueEnvironmentKey(db, i % 4 ? w.main : other, `spare ${i}`, null)).id);
  }
  for (const kind of WORK_KINDS) await seedClaimBacklog(db, options.claimBacklog ?? 30, kind);
  for (let i = 0; i < CLAIMED; i++) {
    const item = await claim(db, WORK_KINDS[i % WORK_KINDS.length]!, 3_600_000);
    if (!item) continue;
    w.leases.set(item.id, item.lease);
    w.add('work:claimed', item.id);
    if (i % 6 === 0) w.add('work', item.id);
  }
  // The factories store a bare `{type}`; give every environment the whole config the API stores.
  await db.execute(
    sql`UPDATE environments SET config = CASE kind WHEN 'cloud' THEN ${JSON.stringify(resolveConfig({ type: 'cloud' }))}::jsonb
                                                   ELSE ${JSON.stringify(resolveConfig({ type: 'self_hosted' }))}::jsonb END`,
  );
  await seedAgents(db, w);
  await seedCursors(db, w);
  if (options.journal) await seedJournal(options.journal, w);
  else w.add('run', 'fuzzrun');
  w.add('step', 'agent', 'other');
  w.secrets.push(w.admin, w.platform, w.revoked, ...w.envKeys.values());
  return w;
}

/** `n` queued poll-lane items, one session each, written in two statements. */
async function backlog(db: Database, environmentId: string, n: number): Promise<void> {
  const tag = newId('env').slice(-10);
  await db.execute(
    sql`INSERT INTO sessions (id, environment_id)
        SELECT ${`sesn_fz${tag}_`} || g, ${environmentId} FROM generate_series(1, ${n}) g`,
  );
  await db.execute(
    sql`INSERT INTO work_items (id, environment_id, session_id, kind, lane)
        SELECT ${`work_fz${tag}_`} || g, ${environmentId}, ${`sesn_fz${tag}_`} || g, 'tool_exec', 'poll'
          FROM generate_series(1, ${n}) g`,
  );
}

/** Agents at versions 1, 2 and 3, one of them archived, with cursors of both agent lists. */
async function seedAgents(db: Database, w: World): Promise<void> {
  for (let i = 0; i < 4; i++) {
    const agent = await createAgent(db, {
      name: `fuzz agent ${i}`,
      model: 'fuzz-model',
      tools: [{ type: 'agent_toolset_20260401' }],
      metadata: { i: String(i) },
    });
    for (let v = 2; v <= Math.min(i + 1, 3); v++) await updateAgent(db, agent.id, { system: `v${v}` });
    if (i === 3) await archiveAgent(db, agent.id);
    w.add('agent', agent.id);
    w.add('cursor:agent', encodeAgentCursor(agent));
    w.add('cursor:agent-version', encodeVersionCursor(agent.id, 2));
    w.versionCursor(agent.id, encodeVersionCursor(agent.id, 2));
  }
}

/** Cursors the lists would hand out, made from real rows with the lists' own encoders. */
async function seedCursors(db: Database, w: World): Promise<void> {
  const rows = (await db.execute(
    sql.raw(`(SELECT 'w' AS t, id, ${ts('created_at')} AS at FROM work_items WHERE lane = 'poll' AND environment_id = '${w.main}' LIMIT 4)
             UNION ALL (SELECT 'e', id, ${ts('created_at')} FROM environments LIMIT 4)`),
  )) as unknown as { rows: { t: string; id: string; at: string }[] };
  for (const r of rows.rows) {
    if (r.t === 'w') w.add('cursor:work', encodeCursor({ createdAt: r.at, id: r.id }));
    else w.add('cursor:env', encodeEnvironmentCursor({ createdAt: r.at, id: r.id } as never));
  }
}

/** A run with two step journals of a few records each, written as the writer writes them. */
async function seedJournal(js: JetStreamClient, w: World): Promise<void> {
  const run = `fuzzrun${newId('req').slice(-8)}`;
  for (const step of ['agent', 'other']) {
    const journal = rawJournal(js, run, step);
    const t = task(run, step);
    await journal.claim(t);
    for (let i = 0; i < 4; i++) await journal.write('entry', t, { i, text: 'é\u202e\u0001' });
    await journal.commit(t, { action: 'continue', output: { ok: true }, state: new Uint8Array([1, 2]) });
  }
  w.add('run', run, run, run, 'norun');
}
