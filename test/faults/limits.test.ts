/**
 * Resource limits (docs/guarantees.md): concurrent long polls over their caps are refused
 * with 429 and `retry-after`; bodies over their caps are refused with 413 whether their
 * length is declared or chunked (the real Node server over loopback, since the adapter is
 * what reads them). Metadata, nesting and page-size caps (400) are in `limits-metadata.test.ts`,
 * the flood of long polls against claims in `limits-flood.test.ts`.
 */
import { describe, expect, it } from 'vitest';
import { createApp } from '../../src/api/app.js';
import { MAX_BODY_BYTES, MAX_PATCH_BODY_BYTES } from '../../src/api/body.js';
import { MAX_LONG_POLLS_PER_KEY, MAX_LONG_POLLS_PER_PROCESS, PollGate } from '../../src/api/poll-gate.js';
import { WakeHub } from '../../src/api/wake.js';
import { apiKey, environmentWithKey } from '../helpers/api.js';
import { useTestDb } from '../helpers/db.js';
import { atScale, recordFault } from '../helpers/faults.js';
import { rawPost } from '../helpers/raw-post.js';
import { useNodeServer } from '../helpers/server.js';
import { type Answer, answer } from './limits/answer.js';

const t = useTestDb('pg');
const server = useNodeServer(t);

/** Statuses and how many answered each, e.g. `200×64, 429×64`. */
function tally(answers: Answer[]): string {
  const counts = new Map<number, number>();
  for (const a of answers) counts.set(a.status, (counts.get(a.status) ?? 0) + 1);
  return [...counts].map(([status, n]) => `${status}×${n}`).join(', ');
}

describe('concurrent long polls over their caps', () => {
  // The app in process, so the caps can be small at the fast scale; the full scale runs the real ones.
  const PER_KEY = atScale(8, MAX_LONG_POLLS_PER_KEY);
  const PER_PROCESS = atScale(32, MAX_LONG_POLLS_PER_PROCESS);

  function gatedApp() {
    const gate = new PollGate({ perKey: PER_KEY, perProcess: PER_PROCESS });
    const app = createApp(
      { db: t.db, wake: new WakeHub(), log: { warn: () => {}, error: () => {} } },
      { pollGate: gate },
    );
    const poll = async (environmentId: string, key: string, query = '?block_ms=999') =>
      answer(
        await app.request(`/v1/environments/${environmentId}/work/poll${query}`, {
          headers: { authorization: `Bearer ${key}` },
        }),
      );
    return { gate, poll };
  }

  function expectRefusals(refused: Answer[], scope: RegExp): void {
    for (const r of refused) {
      expect(r.status).toBe(429);
      expect(r.headers.get('retry-after')).toBe('1');
      expect(r.body).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
      expect(r.body!.error!.message).toMatch(scope);
    }
  }

  it('2× the per-key cap at once: exactly the cap wait, the rest are 429 with retry-after', async (ctx) => {
    const { gate, poll } = gatedApp();
    const e = await environmentWithKey(t.db);
    // One quick poll first, so every long poll below finds the key resolved and reaches the gate at once.
    expect((await poll(e.environmentId, e.key, '')).status).toBe(200);
    const started = performance.now();
    const answers = await Promise.all(
      Array.from({ length: 2 * PER_KEY }, () => poll(e.environmentId, e.key)),
    );
    const elapsed = performance.now() - started;
    const refused = answers.filter((a) => a.status !== 200);
    recordFault(ctx, {
      load: `${2 * PER_KEY} concurrent long polls (block_ms 999), one key, cap ${PER_KEY} per key`,
      faults: '2× the per-key long-poll cap',
      result: `${tally(answers)}; ${gate.open()} slots held afterwards; ${Math.round(elapsed)} ms`,
    });
    expect(answers.filter((a) => a.status === 200)).toHaveLength(PER_KEY);
    expect(refused).toHaveLength(PER_KEY);
    expectRefusals(refused, /environment key/);
    expect(gate.open()).toBe(0);
  });

  it('2× the per-process cap at once, no key over its own: exactly the cap wait, the rest are 429', async (ctx) => {
    const { gate, poll } = gatedApp();
    const keys = await Promise.all(
      Array.from({ length: (2 * PER_PROCESS) / PER_KEY }, () => environmentWithKey(t.db)),
    );
    for (const e of keys) expect((await poll(e.environmentId, e.key, '')).status).toBe(200);
    const started = performance.now();
    const answers = await Promise.all(
      keys.flatMap((e) => Array.from({ length: PER_KEY }, () => poll(e.environmentId, e.key))),
    );
    const elapsed = performance.now() - started;
    const refused = answers.filter((a) => a.status !== 200);
    recordFault(ctx, {
      load: `${answers.length} concurrent long polls over ${keys.length} keys × ${PER_KEY}, cap ${PER_PROCESS} per process`,
      faults: '2× the per-process long-poll cap',
      result: `${tally(answers)}; ${gate.open()} slots held afterwards; ${Math.round(elapsed)} ms`,
    });
    expect(answers.filter((a) => a.status === 200)).toHaveLength(PER_PROCESS);
    expect(refused).toHaveLength(PER_PROCESS);
    expectRefusals(refused, /on this server/);
    expect(gate.open()).toBe(0);
  });
});

/** A JSON object of exactly `bytes` bytes: `{"pad":"xxx…"}`. */
function jsonOfSize(bytes: number): Buffer {
  const frame = Buffer.byteLength('{"pad":""}');
  return Buffer.from(`{"pad":"${'x'.repeat(bytes - frame)}"}`);
}

describe('oversize request bodies on the real server', () => {
  it('limit+1 bytes is a 413 whether the length is declared or chunked; the limit itself is read', async (ctx) => {
    const platform = await apiKey(t.db, 'platform');
    const e = await environmentWithKey(t.db);
    const routes = [
      { name: 'platform enqueue', path: '/v1/platform/work', cap: MAX_BODY_BYTES },
      {
        name: 'metadata patch',
        path: `/v1/environments/${e.environmentId}/work/work_0123456789abcdefghijklmn`,
        cap: MAX_PATCH_BODY_BYTES,
      },
    ];
    const results: string[] = [];
    for (const route of routes) {
      for (const encoding of ['content-length', 'chunked'] as const) {
        const over = await rawPost(server.port, route.path, platform, jsonOfSize(route.cap + 1), encoding);
        expect(over.status, `${route.name} ${encoding} limit+1`).toBe(413);
        expect(over.body).toMatchObject({ type: 'error', error: { type: 'request_too_large' } });
        // At the cap the body is read and judged on what it says: a 400, as it is no valid request.
        const at = await rawPost(server.port, route.path, platform, jsonOfSize(route.cap), encoding);
        expect(at.status, `${route.name} ${encoding} at the limit`).toBe(400);
        expect(at.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
        results.push(
          `${route.name} ${encoding}: ${route.cap + 1} B → ${over.status}, ${route.cap} B → ${at.status}`,
        );
      }
    }
    recordFault(ctx, {
      load: 'one request per case, Node server over loopback',
      faults: 'bodies of limit+1 bytes (Content-Length and chunked)',
      result: results.join('; '),
    });
  });
});
