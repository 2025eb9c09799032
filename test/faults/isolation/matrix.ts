/**
 * The isolation matrix, generated from the route registry (`documentedRoutes()`): every
 * documented route × every caller × every id its path takes (own, foreign, off the wire,
 * missing), each with the answer the lanes and the credentials table of docs/api.md allow. A route added later is
 * probed with no change here; `PLANS` only adds the bodies and query strings that let the
 * own-id probe succeed, so that a 404 for a foreign id is not a 404 for every id.
 */
import type { RouteDoc } from '../../../src/api/openapi.js';
import { NO_HEARTBEAT } from '../../../src/queue/types.js';
import { CALLERS, type Caller } from './callers.js';
import type { Side, World } from './world.js';

/**
 * Which id a probe names. `own`: the caller's own object (must be served); `foreign`: the
 * other environment's object under the own path; `offWire`: an own object the route must not
 * reach (claim lane on the wire, poll lane on the platform lane); `missing`: well-formed,
 * names nothing; `foreignPath`: the other environment in the path.
 */
export type TargetKind =
  | 'own'
  | 'foreign'
  | 'offWire'
  | 'missing'
  | 'foreignPath'
  | 'foreignSession'
  | 'none';

export interface Target {
  kind: TargetKind;
  params: Record<string, string>;
  /** Which environment the path names, for the environment-key check. */
  pathSide?: 'own' | 'foreign' | 'missing';
  body?: unknown;
  query?: string;
}

interface Plan {
  body?(w: World, t: Target): unknown;
  query?(w: World, t: Target): string;
  /** The own item a work route acts on. */
  item?: 'reservedId' | 'activeId';
  targets?(w: World): Target[];
  /** What a foreign or missing id answers when it is not a 404 (the platform lane's lost lease). */
  absentStatus?: number;
  /** An API key sees every environment here, so nothing on it is foreign to that caller. */
  global?: boolean;
  /**
   * A missing id answers like an empty object, not 404, for a caller that sees every
   * environment (API keys): stats of an unknown environment are zeros, cancelling an unknown
   * session stops nothing (both documented). There is nothing foreign to hide from it.
   */
  missingIsEmpty?: boolean;
}

const env = (side: Side) => side.environmentId;
const workTargets = (w: World, item: 'reservedId' | 'activeId'): Target[] => [
  { kind: 'missing', pathSide: 'own', params: { environmentId: env(w.own), workId: w.missing.work } },
  { kind: 'foreign', pathSide: 'own', params: { environmentId: env(w.own), workId: w.foreign[item] } },
  { kind: 'offWire', pathSide: 'own', params: { environmentId: env(w.own), workId: w.own.claimedId } },
  { kind: 'own', pathSide: 'own', params: { environmentId: env(w.own), workId: w.own[item] } },
];
const leaseTargets = (w: World): Target[] =>
  [
    ['missing', w.missing.work],
    ['foreign', w.foreign.claimedId],
    ['offWire', w.own.activeId],
    ['own', w.own.claimedId],
  ].map(([kind, workId]) => ({ kind: kind as TargetKind, params: { workId: workId! } }));
const heartbeatFor = (w: World, t: Target) =>
  t.params.workId === w.own.activeId
    ? w.own.activeHeartbeat
    : t.params.workId === w.foreign.activeId
      ? w.foreign.activeHeartbeat
      : NO_HEARTBEAT;

const W = '/v1/environments/:environmentId/work';
const P = '/v1/platform';
export const PLANS: Record<string, Plan> = {
  'POST /v1/environments': { body: () => ({ name: 'probe', config: { type: 'self_hosted' } }) },
  'GET /v1/environments': { global: true },
  'POST /v1/environments/:environmentId': { body: () => ({ description: 'probe' }) },
  'POST /v1/environments/:environmentId/keys': { body: () => ({ name: 'probe' }) },
  'POST /v1/api_keys': { body: () => ({ name: 'probe', scope: 'platform' }) },
  'POST /v1/agents': { body: () => ({ name: 'probe', model: 'probe-model' }) },
  'GET /v1/agents': { global: true },
  'POST /v1/agents/:agentId': { body: () => ({ description: 'probe' }) },
  'POST /v1/sessions': { body: (w) => ({ agent: w.agentId, environment_id: env(w.own) }) },
  'GET /v1/sessions': { global: true },
  'POST /v1/sessions/:sessionId': { body: () => ({ title: 'probe' }) },
  // An answer to no call: every caller the route takes gets past authentication and scope to
  // the loop's own refusal (400), and nothing is written on any side.
  'POST /v1/sessions/:sessionId/events': {
    body: () => ({ events: [{ type: 'user.tool_result', tool_use_id: 'sevt_probe', content: [] }] }),
  },
  [`POST ${P}/work`]: {
    targets: (w) => [
      {
        kind: 'missing',
        params: {},
        body: { environment_id: w.missing.env, session_id: 'probe_new', kind: 'web_exec' },
      },
      {
        kind: 'own',
        params: {},
        body: { environment_id: env(w.own), session_id: w.own.sessionIds[1], kind: 'web_exec' },
      },
    ],
  },
  [`POST ${P}/work/claim`]: { body: () => ({ kind: 'web_exec', ttl_seconds: 60 }) },
  [`POST ${P}/work/:workId/extend`]: {
    targets: leaseTargets,
    body: (w) => ({ lease: w.own.claimedLease, ttl_seconds: 60 }),
    absentStatus: 409,
  },
  [`POST ${P}/work/:workId/complete`]: {
    targets: leaseTargets,
    body: (w) => ({ lease: w.own.claimedLease }),
    absentStatus: 409,
  },
  [`POST ${P}/work/:workId/complete_and_claim`]: {
    targets: leaseTargets,
    body: (w) => ({ lease: w.own.claimedLease, kind: 'web_exec', ttl_seconds: 60 }),
    absentStatus: 409,
  },
  [`POST ${P}/work/:workId/requeue`]: {
    targets: leaseTargets,
    body: (w) => ({ lease: w.own.claimedLease }),
    absentStatus: 409,
  },
  [`POST ${P}/sessions/:sessionId/cancel`]: { missingIsEmpty: true },
  [`GET ${W}/stats`]: { missingIsEmpty: true },
  [`POST ${W}/:workId/ack`]: { item: 'reservedId' },
  [`POST ${W}/:workId/heartbeat`]: {
    item: 'activeId',
    query: (w, t) => `expected_last_heartbeat=${encodeURIComponent(heartbeatFor(w, t))}`,
  },
  [`POST ${W}/:workId/stop`]: { item: 'activeId', body: () => ({}) },
  [`GET ${W}/:workId`]: { item: 'activeId' },
  [`POST ${W}/:workId`]: { item: 'activeId', body: () => ({ metadata: { probe: 'x' } }) },
};

export const planFor = (r: RouteDoc): Plan => PLANS[`${r.method.toUpperCase()} ${r.path}`] ?? {};

/** The ids a route's path takes, generic by parameter name so a new route needs no plan. */
export function targetsFor(r: RouteDoc, w: World): Target[] {
  const plan = planFor(r);
  const made = plan.targets?.(w) ?? genericTargets(r, w, plan.item ?? 'activeId');
  return made.map((t) => ({
    ...t,
    body: t.body ?? plan.body?.(w, t),
    query: t.query ?? plan.query?.(w, t),
  }));
}

function genericTargets(r: RouteDoc, w: World, item: 'reservedId' | 'activeId'): Target[] {
  const params = [...r.path.matchAll(/:(\w+)/g)].map((m) => m[1]!);
  const has = (p: string) => params.includes(p);
  const ownEnv = env(w.own);
  const fill = (extra: Record<string, string>) => ({ run: 'probe_run', step: 'probe_step', ...extra });
  if (has('workId') && has('environmentId'))
    return workTargets(w, item).map((t) => ({ ...t, params: fill(t.params) }));
  if (has('workId')) return leaseTargets(w).map((t) => ({ ...t, params: fill(t.params) }));
  if (has('keyId') && has('environmentId'))
    return [
      { kind: 'missing', pathSide: 'own', params: fill({ environmentId: ownEnv, keyId: w.missing.envkey }) },
      {
        kind: 'foreign',
        pathSide: 'own',
        params: fill({ environmentId: ownEnv, keyId: w.foreign.spareKey.id }),
      },
      { kind: 'own', pathSide: 'own', params: fill({ environmentId: ownEnv, keyId: w.own.spareKey.id }) },
    ];
  if (has('keyId'))
    return [
      { kind: 'missing', params: fill({ keyId: w.missing.apikey }) },
      { kind: 'own', params: fill({ keyId: w.platform.spare.id }) },
    ];
  if (has('environmentId'))
    return [
      { kind: 'missing', pathSide: 'missing', params: fill({ environmentId: w.missing.env }) },
      // The key/path check only matters where environment keys are taken; elsewhere an admin
      // key may change the other environment, which is no probe of isolation.
      ...(r.credentials.includes('environment_key')
        ? [
            {
              kind: 'foreignPath' as const,
              pathSide: 'foreign' as const,
              params: fill({ environmentId: env(w.foreign) }),
            },
          ]
        : []),
      { kind: 'own', pathSide: 'own', params: fill({ environmentId: ownEnv }) },
    ];
  // Agents belong to no environment: nothing is foreign, only missing or there.
  if (has('agentId'))
    return [
      { kind: 'missing', params: fill({ agentId: w.missing.agent }) },
      { kind: 'own', params: fill({ agentId: w.agentId }) },
    ];
  if (has('sessionId') && r.path.startsWith('/v1/sessions'))
    return [
      { kind: 'missing', params: fill({ sessionId: w.missing.session }) },
      // Routes an environment key may take: the other environment's session must look missing
      // to it (an API key sees it). The API-key-only routes have no "foreign" to probe.
      ...(r.credentials.includes('environment_key')
        ? [{ kind: 'foreignSession' as const, params: fill({ sessionId: w.foreign.apiSessionId }) }]
        : []),
      { kind: 'own', params: fill({ sessionId: w.own.apiSessionId }) },
    ];
  if (has('sessionId'))
    return [
      { kind: 'missing', params: fill({ sessionId: w.missing.session }) },
      { kind: 'own', params: fill({ sessionId: w.own.sessionIds[0] }) },
    ];
  return [{ kind: 'none', params: fill({}) }];
}

/**
 * What a probe may answer. `refused`: 401. `served`: the caller's own object, so anything but
 * 401/403/404 and no undocumented 5xx. `absent`: the missing-id answer, byte for byte bar the
 * request id. `visible`: an API key on another environment it may see.
 */
export type Outcome = 'refused' | 'served' | 'absent' | 'visible';

export function expected(r: RouteDoc, caller: Caller, t: Target): Outcome {
  if (caller.lane === null || !r.credentials.includes(caller.lane)) return 'refused';
  if (caller.lane === 'environment_key' && r.path.includes(':environmentId') && t.pathSide !== caller.side)
    return 'refused';
  if (t.kind === 'foreignPath') return 'visible';
  if (t.kind === 'foreignSession') return caller.lane === 'environment_key' ? 'absent' : 'visible';
  if (t.kind === 'missing' && planFor(r).missingIsEmpty) return 'served';
  if (t.kind === 'foreign' || t.kind === 'offWire' || t.kind === 'missing') return 'absent';
  return 'served';
}

/** Callers whose lane the route takes; each starts on an unchanged world, since its own-id probe may write. */
export const servedCallers = (r: RouteDoc) =>
  CALLERS.filter((c) => c.lane !== null && c.side !== 'foreign' && r.credentials.includes(c.lane));

export function pathOf(r: RouteDoc, t: Target): string {
  return r.path.replace(/:(\w+)/g, (_, p: string) => {
    const v = t.params[p];
    if (v === undefined) throw new Error(`no value for :${p} in ${r.path}`);
    return encodeURIComponent(v);
  });
}
