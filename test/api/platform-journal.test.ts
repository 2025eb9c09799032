import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { beforeAll, describe, expect, it } from 'vitest';
import type { JournalDeps } from '../../src/api/types.js';
import { recordHeaders } from '../../src/journal/codec.js';
import { read } from '../../src/journal/read.js';
import { ensureJournalStream } from '../../src/journal/stream.js';
import { HEADER } from '../../src/journal/types.js';
import { apiKey, environmentWithKey, testApi } from '../helpers/api.js';
import { useTestDb } from '../helpers/db.js';
import { useNatsServer } from '../helpers/nats.js';
import { errorType } from '../helpers/platform.js';
import { rawJournal, task } from '../helpers/raw-journal.js';

interface WirePage {
  data: { seq: number; [field: string]: unknown }[];
  next_after_seq: number | null;
}

describe('GET /v1/platform/runs/{run}/steps/{step}/journal and /runs/{run}/check', () => {
  const t = useTestDb('pg');
  const nats = useNatsServer();
  let journal: JournalDeps;

  beforeAll(async () => {
    const nc = await nats.connect();
    journal = { nc, js: jetstream(nc) };
    await ensureJournalStream(await jetstreamManager(nc));
  });

  async function setup() {
    const api = testApi(t.db, journal);
    const key = await apiKey(t.db, 'platform');
    const get = (path: string, as = key) => api.call('GET', `/v1/platform${path}`, { key: as });
    return { api, key, get };
  }

  async function pages(get: (path: string) => Promise<Response>, base: string, limit: number) {
    const seen: WirePage[] = [];
    let after: number | null = 0;
    while (after !== null) {
      const res = await get(`${base}?after_seq=${after}&limit=${limit}`);
      expect(res.status).toBe(200);
      const page = (await res.json()) as WirePage;
      seen.push(page);
      after = page.next_after_seq;
    }
    return seen;
  }

  it('pages with after_seq until next_after_seq is null, in journal order, every record once', async () => {
    const { get } = await setup();
    const w = rawJournal(journal.js, 'pg1', 'agent');
    const noise = rawJournal(journal.js, 'pg1', 'other');
    await w.claim(task('pg1', 'agent'));
    await noise.claim(task('pg1', 'other'));
    for (let i = 0; i < 5; i++) {
      await w.write('entry', task('pg1', 'agent'), { i });
      await noise.write('entry', task('pg1', 'other'), { i });
    }
    await w.commit(task('pg1', 'agent'), { action: 'continue', state: new Uint8Array([1, 2, 3]) });
    const expected = (await read(journal.js, 'pg1', 'agent')).map((r) => r.seq);
    expect(expected).toHaveLength(7);

    const seen = await pages(get, '/runs/pg1/steps/agent/journal', 3);
    expect(seen.map((p) => p.data.length)).toEqual([3, 3, 1]);
    expect(seen.flatMap((p) => p.data.map((r) => r.seq))).toEqual(expected);
    expect(seen.slice(0, -1).map((p) => p.next_after_seq)).toEqual([expected[2], expected[5]]);
    // A page that ends exactly at the tail says so, rather than promising an empty page.
    const exact = await pages(get, '/runs/pg1/steps/agent/journal', 7);
    expect(exact.map((p) => [p.data.length, p.next_after_seq])).toEqual([[7, null]]);
  });

  it('renders records in snake_case with the identity flat and a commit state as base64', async () => {
    const { get } = await setup();
    const w = rawJournal(journal.js, 'pg2', 'agent');
    const it0 = task('pg2', 'agent', { dispatchNonce: 'nonce-1', delivered: 2, streamSeq: 42 });
    const claim = await w.claim(it0);
    const commit = await w.commit(it0, {
      action: 'continue',
      output: { a: 1 },
      state: new Uint8Array([1, 2, 3]),
    });

    const res = await get('/runs/pg2/steps/agent/journal');
    expect(res.status).toBe(200);
    const body = (await res.json()) as WirePage;
    expect(body.next_after_seq).toBeNull();
    const identity = { iteration: 0, attempt: 1, delivered: 2, stream_seq: 42, dispatch_nonce: 'nonce-1' };
    expect(body.data).toEqual([
      {
        seq: claim,
        time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        type: 'claim',
        ...identity,
        index: 0,
        data: { iteration: 0, attempt: 1, delivered: 2, dispatch_nonce: 'nonce-1', stream_seq: 42 },
      },
      {
        seq: commit,
        time: expect.any(String),
        type: 'commit',
        ...identity,
        index: 1,
        data: { action: 'continue', output: { a: 1 }, state: 'AQID' },
      },
    ]);
  });

  it('a step that never ran, or a cursor at or past the tail, is an empty last page', async () => {
    const { get } = await setup();
    const seq = await rawJournal(journal.js, 'pg3', 'agent').claim(task('pg3', 'agent'));
    for (const path of [
      '/runs/pg3/steps/nothing/journal',
      `/runs/pg3/steps/agent/journal?after_seq=${seq}`,
    ]) {
      const res = await get(path);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ data: [], next_after_seq: null });
    }
  });

  it('a run or step that is not one token of [A-Za-z0-9_-]{1,128}, or a bad after_seq or limit, is a 400', async () => {
    const { get } = await setup();
    for (const bad of ['a.b', '%3E', '%2A', 'r%20x', 'x'.repeat(129)]) {
      expect(await errorType(await get(`/runs/${bad}/steps/agent/journal`), 400)).toBe(
        'invalid_request_error',
      );
      expect(await errorType(await get(`/runs/run/steps/${bad}/journal`), 400)).toBe('invalid_request_error');
      expect(await errorType(await get(`/runs/${bad}/check`), 400)).toBe('invalid_request_error');
    }
    for (const query of ['after_seq=-1', 'after_seq=x', 'limit=0', 'limit=1001', 'limit=1.5']) {
      const res = await get(`/runs/run/steps/agent/journal?${query}`);
      expect(await errorType(res, 400), query).toBe('invalid_request_error');
    }
  });

  it('environment keys and anonymous callers are 401; platform and admin keys are served', async () => {
    const { get } = await setup();
    const env = await environmentWithKey(t.db);
    const admin = await apiKey(t.db, 'admin');
    for (const path of ['/runs/pg4/steps/agent/journal', '/runs/pg4/check']) {
      expect(await errorType(await get(path, env.key), 401)).toBe('authentication_error');
      expect(await errorType(await get(path, ''), 401)).toBe('authentication_error');
      expect((await get(path, admin)).status).toBe(200);
      expect((await get(path)).status).toBe(200);
    }
  });

  it('without NATS configured both routes answer 503 api_error naming NATS_URL', async () => {
    const api = testApi(t.db);
    const key = await apiKey(t.db, 'platform');
    for (const path of ['/runs/pg5/steps/agent/journal', '/runs/pg5/check']) {
      const res = await api.call('GET', `/v1/platform${path}`, { key });
      expect(res.status).toBe(503);
      const body = (await res.json()) as { error: { type: string; message: string } };
      expect(body.error.type).toBe('api_error');
      expect(body.error.message).toMatch(/NATS_URL/);
    }
  });

  it('the check endpoint answers the report: per-step counts and violations, ok, and invariant 3 skipped', async () => {
    const { get } = await setup();
    const good = rawJournal(journal.js, 'pg6', 'good');
    await good.claim(task('pg6', 'good'));
    await good.commit(task('pg6', 'good'), { action: 'complete' });
    const bad = rawJournal(journal.js, 'pg6', 'bad');
    await bad.claim(task('pg6', 'bad'));
    const first = await bad.commit(task('pg6', 'bad'), { action: 'complete' });
    const second = await bad.commit(task('pg6', 'bad'), { action: 'complete' });

    const res = await get('/runs/pg6/check');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      run_id: 'pg6',
      ok: false,
      steps: [
        {
          step_id: 'bad',
          records: 3,
          commits: 2,
          violations: [
            `invariant 1: iteration 0 has 2 commits from accepted attempt 1 (claim at seq ${first - 1}), at seq ${first}, ${second}`,
          ],
        },
        { step_id: 'good', records: 2, commits: 1, violations: [] },
      ],
      skipped: [expect.stringMatching(/^invariant 3 /)],
    });
    const clean = (await (await get('/runs/pg6-none/check')).json()) as { ok: boolean; steps: unknown[] };
    expect(clean).toMatchObject({ ok: true, steps: [] });
  });

  it('check?step audits that step alone: its report, ok for it only, nothing for a step without a journal, 400 for a bad token', async () => {
    const { get } = await setup();
    const good = rawJournal(journal.js, 'pg6s', 'good');
    await good.claim(task('pg6s', 'good'));
    await good.commit(task('pg6s', 'good'), { action: 'complete' });
    const bad = rawJournal(journal.js, 'pg6s', 'bad');
    await bad.claim(task('pg6s', 'bad'));
    await bad.commit(task('pg6s', 'bad'), { action: 'complete' });
    await bad.commit(task('pg6s', 'bad'), { action: 'complete' });

    const one = (await (await get('/runs/pg6s/check?step=good')).json()) as {
      ok: boolean;
      steps: { step_id: string }[];
    };
    expect(one).toMatchObject({
      ok: true,
      steps: [{ step_id: 'good', records: 2, commits: 1, violations: [] }],
    });
    const other = (await (await get('/runs/pg6s/check?step=bad')).json()) as {
      ok: boolean;
      steps: unknown[];
    };
    expect(other).toMatchObject({ ok: false, steps: [{ step_id: 'bad', commits: 2 }] });
    expect(await (await get('/runs/pg6s/check?step=none')).json()).toMatchObject({ ok: true, steps: [] });
    for (const step of ['a.b', 'x'.repeat(129), '%3E'])
      expect(await errorType(await get(`/runs/pg6s/check?step=${step}`), 400)).toBe('invalid_request_error');
  });

  it('a missing journal stream is 503 journal stream not provisioned', async () => {
    const { get } = await setup();
    const jsm = await jetstreamManager(journal.nc);
    await jsm.streams.delete('AGENT_JOURNAL');
    try {
      for (const path of ['/runs/pg7/steps/agent/journal', '/runs/pg7/check']) {
        const res = await get(path);
        expect(res.status).toBe(503);
        const body = (await res.json()) as { error: { type: string; message: string } };
        expect(body.error).toEqual({ type: 'api_error', message: 'journal stream not provisioned' });
      }
    } finally {
      await ensureJournalStream(jsm);
    }
  });

  it('a record that is not JSON is a 502 naming it; the step’s other records are still checked', async () => {
    const { get } = await setup();
    await rawJournal(journal.js, 'pg8', 'agent').claim(task('pg8', 'agent'));
    const bad = await journal.js.publish('journal.pg8.agent', new TextEncoder().encode('not json'));
    const res = await get('/runs/pg8/steps/agent/journal');
    expect(res.status).toBe(502);
    const body = (await res.json()) as { error: { type: string; message: string } };
    expect(body.error.type).toBe('api_error');
    expect(body.error.message).toContain(`record ${bad.seq} on journal.pg8.agent`);
    const report = (await (await get('/runs/pg8/check')).json()) as { ok: boolean };
    expect(report.ok).toBe(false);
  });

  it('a record of a type the server does not know is served under its stored type and checked, never a 5xx', async () => {
    const { get } = await setup();
    const w = rawJournal(journal.js, 'pg10', 'agent');
    const t0 = task('pg10', 'agent');
    await w.claim(t0);
    // What a newer writer could store: the journal's headers, a type this server has no name for.
    const headers = recordHeaders('entry', t0, 1);
    headers.set(HEADER.type, 'checkpoint');
    const other = await journal.js.publish('journal.pg10.agent', new TextEncoder().encode('{"at":3}'), {
      headers,
      expect: { lastSubjectSequence: w.tail },
    });
    const res = await get('/runs/pg10/steps/agent/journal');
    expect(res.status).toBe(200);
    const page = (await res.json()) as WirePage;
    expect(page.data[1]).toMatchObject({ seq: other.seq, type: 'checkpoint', index: 1, data: { at: 3 } });
    const report = (await (await get('/runs/pg10/check')).json()) as { ok: boolean };
    expect(report.ok).toBe(true);
  });

  it('a record whose body is JSON of the wrong shape is a 502 naming it, as one that is not JSON is', async () => {
    const { get } = await setup();
    const w = rawJournal(journal.js, 'pg11', 'agent');
    const t0 = task('pg11', 'agent');
    await w.claim(t0);
    const bad = await journal.js.publish('journal.pg11.agent', new TextEncoder().encode('{"call":0}'), {
      headers: recordHeaders('tool.result', t0, 1),
      expect: { lastSubjectSequence: w.tail },
    });
    const res = await get('/runs/pg11/steps/agent/journal');
    expect(res.status).toBe(502);
    const body = (await res.json()) as { error: { type: string; message: string } };
    expect(body.error).toEqual({
      type: 'api_error',
      message: `journal: record ${bad.seq} on journal.pg11.agent is corrupt: its tool.result body needs "key" to be a string (found none)`,
    });
    const report = (await (await get('/runs/pg11/check')).json()) as { ok: boolean; steps: unknown[] };
    expect(report.steps).toEqual([
      {
        step_id: 'agent',
        records: 2,
        commits: 0,
        violations: [
          `corrupt: seq ${bad.seq} has a tool.result body that needs "key" to be a string (found none)`,
        ],
      },
    ]);
  });

  it('while NATS is down both routes answer 503 with retry-after at once, and serve again once it is back', async () => {
    const { get } = await setup();
    await rawJournal(journal.js, 'pg9', 'agent').claim(task('pg9', 'agent'));
    await nats.kill();
    try {
      for (const path of ['/runs/pg9/steps/agent/journal', '/runs/pg9/check']) {
        const started = performance.now();
        const res = await get(path);
        expect(res.status).toBe(503);
        expect(res.headers.get('retry-after')).toBe('2');
        expect(await errorType(res, 503)).toBe('overloaded_error');
        expect(performance.now() - started).toBeLessThan(1_000);
      }
    } finally {
      await nats.start();
    }
    await expect
      .poll(async () => (await get('/runs/pg9/steps/agent/journal')).status, {
        timeout: 10_000,
        interval: 100,
      })
      .toBe(200);
  });
});
