import { describe, expect, it } from 'vitest';
import { cancelSession, enqueue } from '../../src/queue/index.js';
import { apiKey, environmentWithKey, type TestEnvironment, testApi } from '../helpers/api.js';
import { useTestDb } from '../helpers/db.js';
import { lapseLease, readWork } from '../helpers/factories.js';

type Body = Record<string, unknown>;

describe('ack, heartbeat and stop over HTTP', () => {
  const t = useTestDb('pg');
  const base = (e: TestEnvironment) => `/v1/environments/${e.environmentId}/work`;

  async function polled(e: TestEnvironment): Promise<string> {
    await enqueue(t.db, { ...e, kind: 'tool_exec' });
    const res = await testApi(t.db).call('GET', `${base(e)}/poll`, { key: e.key });
    return ((await res.json()) as { id: string }).id;
  }
  const ack = (e: TestEnvironment, id: string) =>
    testApi(t.db).call('POST', `${base(e)}/${id}/ack`, { key: e.key });
  const beat = (e: TestEnvironment, id: string, expected: string, extra = '') =>
    testApi(t.db).call(
      'POST',
      `${base(e)}/${id}/heartbeat?expected_last_heartbeat=${encodeURIComponent(expected)}${extra}`,
      { key: e.key },
    );
  const stop = (e: TestEnvironment, id: string, body?: unknown, key = e.key) =>
    testApi(t.db).call('POST', `${base(e)}/${id}/stop`, { key, body });

  it('ack answers starting with acknowledged_at, and a re-ack returns it unchanged', async () => {
    const e = await environmentWithKey(t.db);
    const id = await polled(e);
    const first = (await (await ack(e, id)).json()) as Body;
    expect(first).toMatchObject({ id, state: 'starting' });
    expect(first.acknowledged_at).toEqual(expect.any(String));
    const again = (await (await ack(e, id)).json()) as Body;
    expect(again.acknowledged_at).toBe(first.acknowledged_at);
  });

  it('the heartbeat protocol: NO_HEARTBEAT claims, echoes extend, a superseded echo is a typed 412', async () => {
    const e = await environmentWithKey(t.db);
    const id = await polled(e);
    expect((await beat(e, id, 'NO_HEARTBEAT')).status).toBe(412);
    await ack(e, id);
    const claim = (await (await beat(e, id, 'NO_HEARTBEAT')).json()) as Body;
    expect(claim).toEqual({
      type: 'work_heartbeat',
      last_heartbeat: expect.any(String),
      lease_extended: true,
      state: 'active',
      ttl_seconds: 30,
    });
    const next = (await (
      await beat(e, id, claim.last_heartbeat as string, '&desired_ttl_seconds=100000')
    ).json()) as Body;
    expect(next).toMatchObject({ lease_extended: true, state: 'active', ttl_seconds: 300 });
    expect(next.last_heartbeat).not.toBe(claim.last_heartbeat);
    const stale = await beat(e, id, claim.last_heartbeat as string, '&desired_ttl_seconds=60');
    expect(stale.status).toBe(412);
    expect(await stale.json()).toMatchObject({
      type: 'error',
      error: {
        type: 'invalid_request_error',
        details: {
          error_code: 'heartbeat_precondition_failed',
          current_state: {
            state: 'active',
            last_heartbeat: next.last_heartbeat,
            lease_extended: false,
            ttl_seconds: 60,
          },
        },
      },
    });
  });

  it.each(['0', '-3', 'x'])('desired_ttl_seconds=%s falls back to 30', async (ttl) => {
    const e = await environmentWithKey(t.db);
    const id = await polled(e);
    await ack(e, id);
    expect(await (await beat(e, id, 'NO_HEARTBEAT', `&desired_ttl_seconds=${ttl}`)).json()).toMatchObject({
      ttl_seconds: 30,
    });
  });

  it('heartbeat needs expected_last_heartbeat (400); an unparseable one is a 412 even for a missing id', async () => {
    const e = await environmentWithKey(t.db);
    const id = await polled(e);
    const missing = await testApi(t.db).call('POST', `${base(e)}/${id}/heartbeat`, { key: e.key });
    expect(missing.status).toBe(400);
    expect((await beat(e, id, 'not-a-timestamp')).status).toBe(412);
    expect((await beat(e, 'work_0123456789abcdefghjkmnpq', 'not-a-timestamp')).status).toBe(412);
    expect((await beat(e, 'work_0123456789abcdefghjkmnpq', '2026-01-01T00:00:00Z')).status).toBe(404);
  });

  it('a graceful stop of an active item reaches the worker through its next heartbeat', async () => {
    const e = await environmentWithKey(t.db);
    const id = await polled(e);
    await ack(e, id);
    const claim = (await (await beat(e, id, 'NO_HEARTBEAT')).json()) as Body;
    const stopped = await stop(e, id);
    expect(stopped.status).toBe(200);
    expect(stopped.headers.get('content-type')).toBe('application/json');
    const stopping = (await stopped.json()) as Body;
    expect(stopping).toMatchObject({
      type: 'work',
      id,
      state: 'stopping',
      stop_requested_at: expect.any(String),
      stopped_at: null,
    });
    expect(await (await beat(e, id, claim.last_heartbeat as string)).json()).toMatchObject({
      state: 'stopping',
      lease_extended: false,
      last_heartbeat: claim.last_heartbeat,
    });
    const again = await stop(e, id);
    expect(again.status).toBe(409);
    expect(again.headers.get('x-should-retry')).toBe('false');
    const forced = await stop(e, id, { force: true });
    expect(forced.status).toBe(200);
    const body = (await forced.json()) as Body;
    expect(body).toMatchObject({ id, state: 'stopped', stopped_at: expect.any(String) });
    // A force stop after a graceful one keeps the time the stop was first asked for.
    expect(body.stop_requested_at).toBe(stopping.stop_requested_at);
    expect(await readWork(t.db, id)).toMatchObject({ state: 'stopped', lease: null });
    expect((await stop(e, id, { force: true })).status).toBe(409);
  });

  it('a cancelled session answers the echo with stopped, not extended', async () => {
    const e = await environmentWithKey(t.db);
    const id = await polled(e);
    await ack(e, id);
    const claim = (await (await beat(e, id, 'NO_HEARTBEAT')).json()) as Body;
    await cancelSession(t.db, e.sessionId);
    expect(await (await beat(e, id, claim.last_heartbeat as string)).json()).toMatchObject({
      state: 'stopped',
      lease_extended: false,
    });
  });

  it('stop bodies: {"force":"yes"} is a 400; unknown fields are ignored; an API key may stop too', async () => {
    const e = await environmentWithKey(t.db);
    const id = await polled(e);
    expect((await stop(e, id, { force: 'yes' })).status).toBe(400);
    expect((await stop(e, id, '[1]')).status).toBe(400);
    expect((await stop(e, id, '{not json')).status).toBe(400);
    const byApiKey = await stop(e, id, { force: true, x: 1 }, await apiKey(t.db, 'platform'));
    expect([byApiKey.status, ((await byApiKey.json()) as Body).state]).toEqual([200, 'stopped']);
  });

  it('a stale worker is fenced by the rotated id: its ack, heartbeat and stop are 404s', async () => {
    const e = await environmentWithKey(t.db);
    const old = await polled(e);
    await ack(e, old);
    const claim = (await (await beat(e, old, 'NO_HEARTBEAT')).json()) as Body;
    await lapseLease(t.db, old);
    const fresh = (
      (await (await testApi(t.db).call('GET', `${base(e)}/poll`, { key: e.key })).json()) as Body
    ).id as string;
    expect(fresh).not.toBe(old);
    expect((await ack(e, old)).status).toBe(404);
    expect((await beat(e, old, claim.last_heartbeat as string)).status).toBe(404);
    expect((await stop(e, old, { force: true })).status).toBe(404);
    expect((await readWork(t.db, fresh))!.state).toBe('queued');
  });

  it('two concurrent echoes of one heartbeat: exactly one wins', async () => {
    const e = await environmentWithKey(t.db);
    const id = await polled(e);
    await ack(e, id);
    const claim = (await (await beat(e, id, 'NO_HEARTBEAT')).json()) as Body;
    const results = await Promise.all([
      beat(e, id, claim.last_heartbeat as string),
      beat(e, id, claim.last_heartbeat as string),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 412]);
  });
});
