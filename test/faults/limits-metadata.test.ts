/**
 * Resource limits (docs/guarantees.md), the 400 side: metadata over its caps (pair count,
 * key and value length, and the item's key count after a patch, which racing patches cannot
 * overshoot), JSON nested too deep, and list pages over 100 — on the real Node server.
 * `block_ms` above the maximum clamps rather than failing.
 */
import { describe, expect, it } from 'vitest';
import { MAX_METADATA_PAIRS } from '../../src/api/routes/work-update.js';
import { enqueue, getWork, MetadataLimitError, updateMetadata } from '../../src/queue/index.js';
import { apiKey, environmentWithKey } from '../helpers/api.js';
import { useTestDb } from '../helpers/db.js';
import { recordFault } from '../helpers/faults.js';
import { useNodeServer } from '../helpers/server.js';
import { type Answer, answer } from './limits/answer.js';

const t = useTestDb('pg');
const server = useNodeServer(t);

describe('metadata, nesting and page-size caps', () => {
  it('each cap is a 400 naming it; at the cap the request is served', async (ctx) => {
    const admin = await apiKey(t.db, 'admin');
    const platform = await apiKey(t.db, 'platform');
    const cloud = await environmentWithKey(t.db, 'cloud');
    const hosted = await environmentWithKey(t.db);
    const idle = await environmentWithKey(t.db);
    const { work } = await enqueue(t.db, { ...hosted, kind: 'tool_exec' });
    const call = async (method: string, path: string, key: string, body?: unknown) =>
      answer(
        await fetch(`${server.baseURL}${path}`, {
          method,
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
        }),
      );
    const pairs = (n: number, keyLength = 4, valueLength = 1, prefix = 'k') =>
      Object.fromEntries(
        Array.from({ length: n }, (_, i) => [
          `${prefix}${i}`.padEnd(keyLength, 'k'),
          'v'.repeat(valueLength),
        ]),
      );
    const enqueueWith = (metadata: unknown) =>
      call('POST', '/v1/platform/work', platform, {
        environment_id: cloud.environmentId,
        session_id: `s${Math.random().toString(36).slice(2)}`,
        kind: 'model_turn',
        metadata,
      });
    const patch = (metadata: unknown) =>
      call('POST', `/v1/environments/${hosted.environmentId}/work/${work.id}`, admin, { metadata });
    const nested = (depth: number) => `{"environment_id":${'['.repeat(depth - 1)}${']'.repeat(depth - 1)}}`;

    const cases: [string, () => Promise<Answer>, number, RegExp?][] = [
      ['enqueue: 16 pairs, 64-char keys, 512-char values', () => enqueueWith(pairs(16, 64, 512)), 201],
      ['enqueue: 17 pairs', () => enqueueWith(pairs(17)), 400, /at most 16 pairs/],
      ['enqueue: 65-char key', () => enqueueWith(pairs(1, 65)), 400, /<=64 characters/],
      ['enqueue: 513-char value', () => enqueueWith(pairs(1, 4, 513)), 400, /<=512 characters/],
      ['patch: 64 keys, 256-char keys, 16 KiB values', () => patch(pairs(64, 256, 16_384)), 200],
      ['patch: 65 keys', () => patch(pairs(65)), 400, /at most 64 keys/],
      ['patch: 257-char key', () => patch(pairs(1, 257)), 400, /key may be at most 256 characters/],
      [
        'patch: 16 KiB + 1 value',
        () => patch(pairs(1, 4, 16_385)),
        400,
        /value may be at most 16384 characters/,
      ],
      ['patch: a 65th key on the item', () => patch({ extra: 'v' }), 400, /at most 64 keys after the patch/],
      [
        'patch: a key swapped for another',
        () => patch({ extra: 'v', [Object.keys(pairs(1, 256))[0]!]: null }),
        200,
      ],
      [
        'environment: 17 pairs',
        () => call('POST', '/v1/environments', admin, { name: 'e', metadata: pairs(17) }),
        400,
        /at most 16 keys/,
      ],
      [
        'JSON nested 32 deep',
        () => call('POST', '/v1/platform/work', platform, nested(32)),
        400,
        /environment_id/,
      ],
      [
        'JSON nested 33 deep',
        () => call('POST', '/v1/platform/work', platform, nested(33)),
        400,
        /deeper than 32/,
      ],
      [
        'work list limit=100',
        () => call('GET', `/v1/environments/${hosted.environmentId}/work?limit=100`, hosted.key),
        200,
      ],
      [
        'work list limit=101',
        () => call('GET', `/v1/environments/${hosted.environmentId}/work?limit=101`, hosted.key),
        400,
        /between 1 and 100/,
      ],
      [
        'environments limit=101',
        () => call('GET', '/v1/environments?limit=101', admin),
        400,
        /between 1 and 100/,
      ],
    ];
    const results: string[] = [];
    for (const [name, send, status, message] of cases) {
      const got = await send();
      expect(got.status, `${name}: ${JSON.stringify(got.body)}`).toBe(status);
      if (message) {
        expect(got.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
        expect(got.body!.error!.message, name).toMatch(message);
      }
      results.push(`${name} → ${got.status}`);
    }
    const item = await call('GET', `/v1/environments/${hosted.environmentId}/work/${work.id}`, admin);
    expect(Object.keys((item.body as unknown as { metadata: object }).metadata)).toHaveLength(64);

    // block_ms above the maximum clamps to 999 rather than holding the request.
    const started = performance.now();
    const clamped = await call(
      'GET',
      `/v1/environments/${idle.environmentId}/work/poll?block_ms=600000`,
      idle.key,
    );
    const clampedMs = performance.now() - started;
    expect(clamped.status).toBe(200);
    expect(clampedMs).toBeGreaterThanOrEqual(990);
    expect(clampedMs).toBeLessThan(5_000);
    results.push(`block_ms=600000 → ${clamped.status} in ${Math.round(clampedMs)} ms`);

    recordFault(ctx, {
      load: `${cases.length + 1} requests, Node server over loopback`,
      faults: 'metadata, nesting, page size and block_ms at and over their caps',
      result: results.join('; '),
    });
  });

  it('racing patches cannot overshoot the item key cap: exactly the free slots are taken', async (ctx) => {
    const hosted = await environmentWithKey(t.db);
    const { work } = await enqueue(t.db, { ...hosted, kind: 'tool_exec' });
    const start = Object.fromEntries(
      Array.from({ length: MAX_METADATA_PAIRS - 4 }, (_, i) => [`base${i}`, 'v']),
    );
    await updateMetadata(t.db, hosted.environmentId, work.id, start, []);
    const racers = 12;
    const outcomes = await Promise.allSettled(
      Array.from({ length: racers }, (_, i) =>
        updateMetadata(t.db, hosted.environmentId, work.id, { [`racer${i}`]: 'v' }, [], {
          maxPairs: MAX_METADATA_PAIRS,
        }),
      ),
    );
    const landed = outcomes.filter((o) => o.status === 'fulfilled').length;
    const refused = outcomes.filter(
      (o) => o.status === 'rejected' && o.reason instanceof MetadataLimitError,
    ).length;
    const keys = Object.keys((await getWork(t.db, hosted.environmentId, work.id)).metadata).length;
    recordFault(ctx, {
      load: `${racers} concurrent one-key patches on an item holding ${MAX_METADATA_PAIRS - 4} keys`,
      faults: 'racing patches at the item key cap',
      result: `${landed} landed, ${refused} refused (MetadataLimitError), ${keys} keys on the item`,
    });
    expect([landed, refused, keys]).toEqual([4, racers - 4, MAX_METADATA_PAIRS]);
  });
});
