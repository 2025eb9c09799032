import { describe, expect, it } from 'vitest';
import { WORK_KINDS } from '../../src/queue/types.js';
import { useTestDb } from '../helpers/db.js';
import { lapseLease, leaseWindowMs, readWork } from '../helpers/factories.js';
import { errorType, platformSetup, type WireItem } from '../helpers/platform.js';

describe('POST /v1/platform/work/claim', () => {
  // Room for 16 claims in flight at once, each with its credential lookup.
  const t = useTestDb('pg', { poolSize: 20 });

  it('leases the oldest item of the kind and answers it with an opaque proof; an empty lane is 200 null', async () => {
    const p = await platformSetup(t.db);
    const id = await p.enqueue('model_turn');
    const res = await p.post('/work/claim', { kind: 'model_turn', ttl_seconds: 60 });
    expect(res.status).toBe(200);
    const item = (await res.json()) as WireItem;
    expect(Object.keys(item).sort()).toEqual(
      [
        'claims',
        'environment_id',
        'id',
        'kind',
        'lease',
        'metadata',
        'reclaimed',
        'session_id',
        'trace_context',
      ].sort(),
    );
    expect(item).toMatchObject({
      id,
      environment_id: p.env.environmentId,
      session_id: p.env.sessionId,
      kind: 'model_turn',
      reclaimed: false,
      claims: 1,
      metadata: {},
      trace_context: null,
    });
    expect(await readWork(t.db, id)).toMatchObject({ state: 'active', lease: item.lease });
    const empty = await p.post('/work/claim', { kind: 'model_turn', ttl_seconds: 60 });
    expect(empty.status).toBe(200);
    expect(empty.headers.get('content-type')).toContain('application/json');
    expect(await empty.json()).toBeNull();
  });

  it('hands out only the asked kind', async () => {
    const p = await platformSetup(t.db);
    const web = await p.enqueue('web_exec');
    expect(await p.claim('mcp_exec')).toBeNull();
    expect((await p.claim('web_exec'))!.id).toBe(web);
  });

  it('a cloud tool_exec is claimable over the platform lane while a self_hosted one is not (it is polled)', async () => {
    const selfHosted = await platformSetup(t.db, 'self_hosted');
    const polled = await selfHosted.enqueue('tool_exec');
    expect(await selfHosted.claim('tool_exec')).toBeNull();
    const poll = await selfHosted.api.call(
      'GET',
      `/v1/environments/${selfHosted.env.environmentId}/work/poll`,
      {
        key: selfHosted.env.key,
      },
    );
    expect(((await poll.json()) as { id: string }).id).toBe(polled);

    const cloud = await platformSetup(t.db, 'cloud');
    const claimed = await cloud.enqueue('tool_exec');
    expect((await cloud.claim('tool_exec'))!.id).toBe(claimed);
  });

  it('a lapsed lease is reclaimed under the same id with reclaimed:true and claims:2', async () => {
    const p = await platformSetup(t.db);
    const id = await p.enqueue('model_turn');
    const first = (await p.claim('model_turn'))!;
    expect(await p.claim('model_turn')).toBeNull();
    await lapseLease(t.db, id);
    const second = (await p.claim('model_turn'))!;
    expect(second).toMatchObject({ id, reclaimed: true, claims: 2 });
    expect(second.lease).not.toBe(first.lease);
  });

  it('ttl_seconds is a number greater than 0 and at most 3600, and sets the lease that long', async () => {
    const p = await platformSetup(t.db);
    for (const ttl of [0, -1, 3600.001, 3601, '30', null, Number.NaN, undefined]) {
      const res = await p.post('/work/claim', { kind: 'model_turn', ttl_seconds: ttl });
      expect(await errorType(res, 400)).toBe('invalid_request_error');
    }
    for (const [i, ttl] of [3600, 0.5].entries()) {
      const id = await p.enqueue('outputs_harvest', `ttl-${i}`);
      expect((await p.claim('outputs_harvest', ttl))!.id).toBe(id);
      expect(await leaseWindowMs(t.db, id)).toBeCloseTo(ttl * 1000, 0);
    }
  });

  it('an unknown kind, an unknown field or a missing body is a 400', async () => {
    const p = await platformSetup(t.db);
    for (const body of [
      { kind: 'bogus', ttl_seconds: 30 },
      { kind: 'model_turn', ttl_seconds: 30, environment_id: p.env.environmentId },
      { ttl_seconds: 30 },
      undefined,
    ]) {
      expect(await errorType(await p.post('/work/claim', body), 400)).toBe('invalid_request_error');
    }
  });

  it('claims every kind on a cloud environment', async () => {
    const p = await platformSetup(t.db, 'cloud');
    for (const kind of WORK_KINDS) {
      const id = await p.enqueue(kind);
      expect((await p.claim(kind))!.id).toBe(id);
    }
  });

  it('16 concurrent HTTP claims over 8 items hand each item out exactly once', async () => {
    const p = await platformSetup(t.db);
    const ids = [];
    for (let i = 0; i < 8; i++) ids.push(await p.enqueue('web_exec', `race-${i}`));
    const answers = await Promise.all(
      Array.from({ length: 16 }, () =>
        p.api.app.request('/v1/platform/work/claim', {
          method: 'POST',
          headers: { authorization: `Bearer ${p.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ kind: 'web_exec', ttl_seconds: 60 }),
        }),
      ),
    );
    expect(answers.map((r) => r.status)).toEqual(Array(16).fill(200));
    const items = (await Promise.all(answers.map((r) => r.json()))) as (WireItem | null)[];
    const claimed = items.filter((i): i is WireItem => i !== null);
    expect(claimed).toHaveLength(8);
    expect(claimed.map((i) => i.id).sort()).toEqual([...ids].sort());
    expect(claimed.every((i) => i.claims === 1 && !i.reclaimed)).toBe(true);
  });
});
