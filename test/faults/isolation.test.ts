/**
 * Tenant isolation and key lifecycle (docs/guarantees.md), as one
 * matrix generated from the route registry: every route × no key, malformed keys, keys in
 * the query string, wrong secrets, revoked and expired keys, another environment's key, API
 * keys of the wrong scope and environment keys off their lane × own, foreign, off-the-wire
 * and missing ids. Only the documented 401/404 (409 for a lost lease) may answer a probe that
 * is not the caller's own; a foreign or missing id answers exactly like a missing one; and no
 * answer carries anything of the other environment that the caller did not send itself.
 */
import { describe, expect, it } from 'vitest';
import { createApp } from '../../src/api/app.js';
import { documentedRoutes, type RouteDoc } from '../../src/api/openapi.js';
import { registerConsole } from '../../src/console/index.js';
import { testApi } from '../helpers/api.js';
import { useTestDb } from '../helpers/db.js';
import { recordFault } from '../helpers/faults.js';
import { CALLERS, type Caller, type Lane } from './isolation/callers.js';
import { expected, planFor, servedCallers, type Target, targetsFor } from './isolation/matrix.js';
import {
  type Answer,
  checkLeaks,
  checkStatus,
  comparable,
  newTally,
  send,
  type Tally,
} from './isolation/probe.js';
import { allSecrets, fingerprint, foreignTokens, seedWorld, type World } from './isolation/world.js';

/** The callers by fault, e.g. "revoked ×3". */
function callerFaults(): string {
  const counts = new Map<string, number>();
  for (const c of CALLERS) counts.set(c.fault, (counts.get(c.fault) ?? 0) + 1);
  return [...counts].map(([fault, n]) => (n > 1 ? `${fault} ×${n}` : fault)).join(', ');
}

/** Building the app registers (and documents) every route. */
function registry(): { documented: readonly RouteDoc[]; served: { method: string; path: string }[] } {
  const app = createApp({ db: {} as never }, { console: registerConsole });
  return { documented: documentedRoutes(), served: app.routes };
}

describe('isolation: every route × every credential × every id', () => {
  const t = useTestDb('pg');
  const fresh = async () => {
    await t.reset();
    return { w: await seedWorld(t.db), api: testApi(t.db) };
  };

  it('every route the router serves is documented with a credential lane', () => {
    const { documented, served } = registry();
    const key = (m: string, p: string) => `${m.toUpperCase()} ${p}`;
    const docs = new Set(documented.map((r) => key(r.method, r.path)));
    // ALL entries are the middleware and the authenticated 404/405 fallbacks; the OpenAPI
    // document itself is public by design. The console's pages take no API credential at all:
    // their gate (a signed-in admin, same-origin forms) is tested over every console route in
    // test/console/gate.test.ts.
    const routes = served.filter(
      (r) => r.method !== 'ALL' && r.path !== '/openapi.json' && !r.path.startsWith('/console'),
    );
    expect(routes.filter((r) => !docs.has(key(r.method, r.path)))).toEqual([]);
    for (const r of documented) {
      expect(r.credentials.length, key(r.method, r.path)).toBeGreaterThan(0);
      expect(r.credentials, key(r.method, r.path)).not.toContain('none');
    }
    expect(documented.length).toBeGreaterThanOrEqual(28);
  });

  it('answers only the documented 401/404, identically for foreign and missing ids, and leaks nothing', async (ctx) => {
    const { documented } = registry();
    const tally = newTally();
    let fingerprints = 0;
    let worlds = 0;
    const deadBodies = new Map<string, Set<string>>();
    // One world for as long as nothing changes it: a probe that wrote gets the next one a
    // fresh world, so every own-id probe finds its object as seeded.
    let current: { w: World; api: ReturnType<typeof testApi>; all: string; foreign: string } | undefined;
    const clean = async () => {
      fingerprints++;
      if (current && (await fingerprint(t.db)) === current.all) return current;
      const { w, api } = await fresh();
      worlds++;
      current = {
        w,
        api,
        all: await fingerprint(t.db),
        foreign: await fingerprint(t.db, w.foreign.environmentId),
      };
      return current;
    };
    for (const r of documented) {
      const plan = planFor(r);
      // Refused probes first: a 401 must change nothing anywhere.
      const { w, api, all } = await clean();
      for (const caller of CALLERS) {
        for (const target of targetsFor(r, w)) {
          if (expected(r, caller, target) !== 'refused') continue;
          const a = await probe(api, w, r, caller, target, 'refused', tally);
          if (caller.dead) {
            const set = deadBodies.get(`${r.method} ${r.path}`) ?? new Set();
            set.add(JSON.stringify(JSON.parse(a.text).error));
            deadBodies.set(`${r.method} ${r.path}`, set);
          }
        }
      }
      fingerprints++;
      if ((await fingerprint(t.db)) !== all)
        tally.failures.push(`${r.method} ${r.path}: a 401 changed a row`);
      for (const caller of servedCallers(r)) {
        const { w, api, foreign } = await clean();
        let missing: Answer | undefined;
        for (const target of targetsFor(r, w)) {
          const outcome = expected(r, caller, target);
          const a = await probe(api, w, r, caller, target, outcome, tally, missing, plan.absentStatus);
          if (target.kind === 'missing') missing = a;
        }
        fingerprints++;
        if ((await fingerprint(t.db, w.foreign.environmentId)) !== foreign)
          tally.failures.push(
            `${r.method} ${r.path} as ${caller.name}: the foreign environment's rows changed`,
          );
      }
    }
    for (const [route, bodies] of deadBodies)
      if (bodies.size !== 1)
        tally.failures.push(`${route}: unknown, revoked and expired keys answer differently`);

    const routeProbes = tally.probes;
    const fallbacks = await probeFallbacks(tally);
    recordFault(ctx, {
      load: `2 environments (own, foreign) × (3 sessions, 4 items, 4 environment keys) + 7 API keys; ${documented.length} routes × ${CALLERS.length} callers × ≤ 4 ids = ${routeProbes} probes, + ${fallbacks} fallbacks × ${CALLERS.length} = ${tally.probes - routeProbes}; ${worlds} worlds seeded`,
      faults: `${callerFaults()}; ids own / foreign / off-wire / missing / other environment's path`,
      result: `${tally.byOutcome.refused} × 401, ${tally.byOutcome.absent} absent (404/409) each ≡ missing (${tally.comparisons} compared), ${tally.byOutcome.served} served, ${tally.byOutcome.visible} visible; statuses ${JSON.stringify(tally.statuses)}; ${tally.searched} token searches; ${fingerprints} row fingerprints compared; ${tally.failures.length} failures`,
    });
    expect(tally.failures).toEqual([]);
  });

  async function probe(
    api: ReturnType<typeof testApi>,
    w: World,
    r: RouteDoc,
    caller: Caller,
    target: Target,
    outcome: ReturnType<typeof expected>,
    tally: Tally,
    missing?: Answer,
    absentStatus = 404,
  ): Promise<Answer> {
    const a = await send(api, w, r, caller, target);
    checkStatus(tally, r, a, outcome, absentStatus, missing);
    // An API key legitimately sees every environment on a global route, and the other one in a path it names.
    const sees = outcome === 'visible' || (outcome === 'served' && planFor(r).global === true);
    checkLeaks(tally, a, foreignTokens(w), allSecrets(w), sees ? null : w.own.environmentId);
    return a;
  }

  /** The authenticated 404/405 fallbacks: a refused caller learns nothing of what exists. */
  async function probeFallbacks(tally: Tally): Promise<number> {
    const { served } = registry();
    const { w, api } = await fresh();
    // The console's catch-all answers by its own gate (a redirect to sign-in), tested in
    // test/console/gate.test.ts.
    const fallbacks = served.filter(
      (r) => r.method === 'ALL' && r.path !== '/*' && !r.path.startsWith('/console'),
    );
    for (const f of fallbacks) {
      const work = f.path.startsWith('/v1/environments/');
      const lanes: Lane[] = work
        ? ['environment_key', 'admin_api_key', 'platform_api_key']
        : ['admin_api_key', 'platform_api_key'];
      const doc: RouteDoc = { method: 'put', path: f.path, summary: '', credentials: lanes, responses: {} };
      const path = f.path
        .replace(':environmentId', w.own.environmentId)
        .replace(':workId', w.own.activeId)
        .replace(':sessionId', w.own.sessionIds[0])
        .replace('/*', '/no-such-thing');
      const target: Target = { kind: 'none', params: {}, pathSide: 'own' };
      for (const caller of CALLERS) {
        const outcome = expected(doc, caller, target);
        const a = await send(api, w, doc, caller, target, path);
        tally.probes++;
        tally.statuses[a.status] = (tally.statuses[a.status] ?? 0) + 1;
        const ok = outcome === 'refused' ? a.status === 401 : a.status === 404 || a.status === 405;
        if (!ok) tally.failures.push(`${a.label}: fallback answered ${a.status} for a ${outcome} caller`);
        checkLeaks(tally, a, foreignTokens(w), allSecrets(w), w.own.environmentId);
      }
    }
    return fallbacks.length;
  }

  it('revoking through the API locks a warm key out of every route at once, here', async (ctx) => {
    const { documented } = registry();
    const { w, api } = await fresh();
    const admin = { authorization: `Bearer ${w.admin.live.secret}` };
    const call = async (method: string, path: string, headers: Record<string, string>, body?: unknown) => {
      const res = await api.call(method, path, { headers, body });
      return {
        status: res.status,
        json: (await res.json().catch(() => null)) as Record<string, string> | null,
      };
    };
    const envPath = `/v1/environments/${w.own.environmentId}`;
    const envKey = (await call('POST', `${envPath}/keys`, admin, { name: 'warm' })).json!;
    const platform = (await call('POST', '/v1/api_keys', admin, { name: 'warm', scope: 'platform' })).json!;
    const second = (await call('POST', '/v1/api_keys', admin, { name: 'warm', scope: 'admin' })).json!;
    const keys = [envKey, platform, second].map((k) => ({
      id: k.id!,
      auth: { authorization: `Bearer ${k.key}` },
    }));
    // Warm this process's credential cache with every key.
    for (const k of keys) expect((await call('GET', `${envPath}/work/stats`, k.auth)).status).toBe(200);
    expect((await call('POST', `${envPath}/keys/${envKey.id}/revoke`, admin)).status).toBe(204);
    for (const k of keys.slice(1))
      expect((await call('POST', `/v1/api_keys/${k.id}/revoke`, admin)).status).toBe(204);

    const unknown = { authorization: `Bearer lh_api_${'A'.repeat(43)}` };
    let probes = 0;
    const failures: string[] = [];
    for (const r of documented) {
      const own = targetsFor(r, w).find((x) => x.kind === 'own' || x.kind === 'none')!;
      const dead: Caller = { name: 'unknown', fault: '', lane: null, headers: () => unknown };
      const reference = comparable(await send(api, w, r, dead, own));
      for (const k of keys) {
        const a = await send(api, w, r, { ...dead, name: `revoked ${k.id}`, headers: () => k.auth }, own);
        probes++;
        if (a.status !== 401 || comparable(a) !== reference)
          failures.push(`${a.label}: ${a.status} ${a.text}`);
      }
    }
    // Deleting an environment forgets its keys at once too.
    const gone = (
      await call('POST', '/v1/environments', admin, { name: 'gone', config: { type: 'self_hosted' } })
    ).json!;
    const goneKey = (await call('POST', `/v1/environments/${gone.id}/keys`, admin, { name: 'k' })).json!;
    const poll = () =>
      call('GET', `/v1/environments/${gone.id}/work/poll`, { authorization: `Bearer ${goneKey.key}` });
    expect((await poll()).status).toBe(200);
    expect((await call('DELETE', `/v1/environments/${gone.id}`, admin)).status).toBe(200);
    expect((await poll()).status).toBe(401);

    recordFault(ctx, {
      load: `3 keys (environment, platform, admin) issued and warmed in one process; ${documented.length} routes`,
      faults: 'revoked through the API while cached; an environment deleted while its key is cached',
      result: `${probes - failures.length}/${probes} revoked probes → 401 identical to an unknown key; deleted environment's key → 401 on its next poll`,
    });
    expect(failures).toEqual([]);
  });
});
