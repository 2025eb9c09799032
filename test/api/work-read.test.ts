import { describe, expect, it } from 'vitest';
import { enqueue } from '../../src/queue/index.js';
import { apiKey, environmentWithKey, testApi } from '../helpers/api.js';
import { useTestDb } from '../helpers/db.js';
import { createSession } from '../helpers/factories.js';

type Page = { data: { id: string }[]; next_page: string | null };

describe('get, metadata patch, list and stats over HTTP', () => {
  const t = useTestDb('pg');

  it('GET /work/{id} answers the item to an API key; missing and malformed ids are 404s', async () => {
    const e = await environmentWithKey(t.db);
    const { work } = await enqueue(t.db, { ...e, kind: 'tool_exec' });
    const admin = await apiKey(t.db);
    const api = testApi(t.db);
    const got = await api.call('GET', `/v1/environments/${e.environmentId}/work/${work.id}`, { key: admin });
    expect(await got.json()).toMatchObject({ id: work.id, state: 'queued', type: 'work' });
    for (const id of [
      'work_0123456789abcdefghjkmnpq',
      'work_nope',
      'work_%00',
      'env_0123456789abcdefghjkmnpq',
    ]) {
      const res = await api.call('GET', `/v1/environments/${e.environmentId}/work/${id}`, { key: admin });
      expect(res.status, id).toBe(404);
      expect(await res.json()).toMatchObject({
        error: { type: 'not_found_error', message: 'work item not found' },
      });
    }
  });

  it('a model_turn id, a cloud item and another environment’s item all look missing', async () => {
    const e = await environmentWithKey(t.db);
    const cloud = await environmentWithKey(t.db, 'cloud');
    const other = await environmentWithKey(t.db);
    const turn = await enqueue(t.db, { ...e, kind: 'model_turn' });
    const cloudItem = await enqueue(t.db, { ...cloud, kind: 'tool_exec' });
    const otherItem = await enqueue(t.db, { ...other, kind: 'tool_exec' });
    const admin = await apiKey(t.db);
    for (const id of [turn.work.id, cloudItem.work.id, otherItem.work.id]) {
      const res = await testApi(t.db).call('GET', `/v1/environments/${e.environmentId}/work/${id}`, {
        key: admin,
      });
      expect(res.status).toBe(404);
    }
  });

  it('the metadata patch upserts strings, deletes nulls, keeps "" and validates the body before the id', async () => {
    const e = await environmentWithKey(t.db);
    const { work } = await enqueue(t.db, { ...e, kind: 'tool_exec' });
    const admin = await apiKey(t.db);
    const patch = (body: unknown, id = work.id) =>
      testApi(t.db).call('POST', `/v1/environments/${e.environmentId}/work/${id}`, { key: admin, body });
    expect(await (await patch({ metadata: { a: '1', b: '2' } })).json()).toMatchObject({
      metadata: { a: '1', b: '2' },
    });
    expect(await (await patch({ metadata: { a: '9', b: null, c: '' } })).json()).toMatchObject({
      metadata: { a: '9', c: '' },
    });
    expect((await (await patch({ metadata: {} })).json()) as object).toMatchObject({
      metadata: { a: '9', c: '' },
    });
    for (const bad of [
      {},
      { metadata: null },
      { metadata: { a: 5 } },
      { metadata: {}, extra: 1 },
      '[]',
      '"x"',
      '{',
    ]) {
      const res = await patch(bad);
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(await res.json()).toMatchObject({ error: { type: 'invalid_request_error' } });
    }
    expect((await patch({ metadata: { a: 'x\u0000y' } })).status).toBe(400);
    expect((await patch({ metadata: { a: '1' } }, 'work_0123456789abcdefghjkmnpq')).status).toBe(404);
    expect((await patch({ bad: 1 }, 'work_0123456789abcdefghjkmnpq')).status).toBe(400);
    // The literal segments route here for POST: a valid body on "poll" is a 404, a bad one a 400.
    expect((await patch({ metadata: { a: '1' } }, 'poll')).status).toBe(404);
    expect((await patch({}, 'poll')).status).toBe(400);
  });

  it('the patch refuses oversized bodies with 413 and too many keys with 400', async () => {
    const e = await environmentWithKey(t.db);
    const { work } = await enqueue(t.db, { ...e, kind: 'tool_exec' });
    const admin = await apiKey(t.db);
    const path = `/v1/environments/${e.environmentId}/work/${work.id}`;
    const huge = { metadata: { a: 'x'.repeat(5 * 1024 * 1024) } };
    const tooLarge = await testApi(t.db).call('POST', path, { key: admin, body: huge });
    expect(tooLarge.status).toBe(413);
    expect(await tooLarge.json()).toMatchObject({ error: { type: 'request_too_large' } });
    const many = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v']));
    expect((await testApi(t.db).call('POST', path, { key: admin, body: { metadata: many } })).status).toBe(
      400,
    );
  });

  it('list pages newest first with limit, next_page null on the last page, no overlap', async () => {
    const e = await environmentWithKey(t.db);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const sessionId = await createSession(t.db, e.environmentId);
      ids.push(
        (await enqueue(t.db, { environmentId: e.environmentId, sessionId, kind: 'tool_exec' })).work.id,
      );
    }
    await enqueue(t.db, { ...e, kind: 'model_turn' });
    const seen: string[] = [];
    let page: string | null = null;
    let pages = 0;
    do {
      const query: string = page ? `?limit=2&page=${page}` : '?limit=2';
      const body = (await (
        await testApi(t.db).call('GET', `/v1/environments/${e.environmentId}/work${query}`, { key: e.key })
      ).json()) as Page;
      seen.push(...body.data.map((w) => w.id));
      page = body.next_page;
      pages++;
    } while (page && pages < 10);
    expect(pages).toBe(3);
    expect(seen).toEqual([...ids].reverse());
  });

  it('list rejects bad limits and cursors, answers an empty environment with [] and null', async () => {
    const e = await environmentWithKey(t.db);
    const list = (q: string) =>
      testApi(t.db).call('GET', `/v1/environments/${e.environmentId}/work${q}`, { key: e.key });
    expect(await (await list('')).json()).toEqual({ data: [], next_page: null });
    for (const q of ['?limit=0', '?limit=101', '?limit=abc', '?page=not-a-cursor', '?page=djF8eHx5']) {
      expect((await list(q)).status, q).toBe(400);
    }
  });

  it('a cursor naming its position with any RFC 3339 offset pages, never a 500', async () => {
    const e = await environmentWithKey(t.db);
    // base64url of `v1|2026-11-30T09:34:12+23:59|work_…`: valid RFC 3339 that Postgres would refuse to cast.
    const page = Buffer.from('v1|2026-11-30T09:34:12+23:59|work_0123456789abcdefghjkmnpq').toString(
      'base64url',
    );
    const res = await testApi(t.db).call('GET', `/v1/environments/${e.environmentId}/work?page=${page}`, {
      key: e.key,
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ data: [], next_page: null });
  });

  it('an environment id Leasehold never mints (a NUL in it) is answered as an unknown one, never 500', async () => {
    const e = await environmentWithKey(t.db);
    const { work } = await enqueue(t.db, { ...e, kind: 'tool_exec' });
    const admin = await apiKey(t.db);
    const api = testApi(t.db);
    for (const env of ['env_%00', 'work_%00', `${e.environmentId}%00`, 'x'.repeat(300)]) {
      const base = `/v1/environments/${env}/work`;
      const stats = await api.call('GET', `${base}/stats`, { key: admin });
      expect(stats.status, env).toBe(200);
      expect(await stats.json()).toMatchObject({ depth: 0, pending: 0, workers_polling: 0 });
      expect((await api.call('GET', `${base}/${work.id}`, { key: admin })).status, env).toBe(404);
      const patch = await api.call('POST', `${base}/${work.id}`, {
        key: admin,
        body: { metadata: { a: 'b' } },
      });
      expect(patch.status, env).toBe(404);
      expect((await api.call('POST', `${base}/${work.id}/stop`, { key: admin })).status, env).toBe(404);
      // An environment key belongs to its own environment only: refused, whatever the refusal's status.
      expect((await api.call('GET', `${base}/poll`, { key: e.key })).status, env).toBeOneOf([401, 403]);
    }
  });

  it('stats counts queued items: depth, pending after a poll, neither after an ack', async () => {
    const e = await environmentWithKey(t.db);
    const api = testApi(t.db);
    const stats = async () =>
      (
        await api.call('GET', `/v1/environments/${e.environmentId}/work/stats`, { key: await apiKey(t.db) })
      ).json();
    expect(await stats()).toEqual({
      type: 'work_queue_stats',
      depth: 0,
      pending: 0,
      oldest_queued_at: null,
      workers_polling: 0,
    });
    await enqueue(t.db, { ...e, kind: 'tool_exec' });
    const s2 = await createSession(t.db, e.environmentId);
    await enqueue(t.db, { environmentId: e.environmentId, sessionId: s2, kind: 'tool_exec' });
    expect(await stats()).toMatchObject({ depth: 2, pending: 0, oldest_queued_at: expect.any(String) });
    const polled = (await (
      await api.call('GET', `/v1/environments/${e.environmentId}/work/poll`, { key: e.key })
    ).json()) as {
      id: string;
    };
    expect(await stats()).toMatchObject({ depth: 1, pending: 1 });
    await api.call('POST', `/v1/environments/${e.environmentId}/work/${polled.id}/ack`, { key: e.key });
    expect(await stats()).toMatchObject({ depth: 1, pending: 0 });
  });
});
