/**
 * The app process's wall clock skewed an hour either way changes nothing (docs/guarantees.md): the database stamps all time. The real Node server runs with an injected
 * clock (`preload/skew-clock.mjs`: `Date` an hour ahead or behind; each response shows the
 * process's own reading, so the skew is checked to be in effect before anything else), and
 * every lease, reservation, heartbeat and poll window it stamps is measured against the
 * database's clock. The lease keeper and housekeeping are run in this process under the
 * same skew. A source scan keeps wall-clock reads out of lease arithmetic (a lint guard).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { sql } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { maybeRow } from '../../src/db/handle.js';
import { runOnce } from '../../src/housekeeping/index.js';
import { claim, enqueue, keepLease } from '../../src/queue/index.js';
import { apiKey, environmentWithKey } from '../helpers/api.js';
import { openTestDb, type TestDb } from '../helpers/db.js';
import {
  agePoll,
  backdateLease,
  createEnvironment,
  createSession,
  leaseWindowMs,
  setupSession,
} from '../helpers/factories.js';
import { recordFault } from '../helpers/faults.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { type RunningServer, startServer } from '../helpers/server.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const PRELOAD = path.join(import.meta.dirname, 'preload/skew-clock.mjs');
const HOUR = 3_600_000;
/** A stamped duration may differ from the configured one by this much (both ends stamped by one statement). */
const STAMP_TOLERANCE_MS = 100;
/** The time from a stamp to reading it back, on a busy 2-core machine. */
const READBACK_MS = 1_000;

let t: TestDb;
beforeAll(async () => {
  t = await openTestDb('pg');
}, 60_000);
afterAll(async () => {
  await t?.close();
});

/** ms from the database's clock now to the item's lease expiry (negative once lapsed). */
async function leaseLeftMs(workId: string): Promise<number> {
  const row = await maybeRow<{ ms: number }>(
    t.db,
    sql`SELECT (extract(epoch FROM lease_expires_at - clock_timestamp()) * 1000)::double precision AS ms
          FROM work_items WHERE id = ${workId}`,
  );
  return row!.ms;
}

async function dbNowMs(): Promise<number> {
  const row = await maybeRow<{ ms: number }>(
    t.db,
    sql`SELECT (extract(epoch FROM clock_timestamp()) * 1000)::double precision AS ms`,
  );
  return row!.ms;
}

/** A lease stamped for `ttlMs` by the database: its window exact, its expiry ttl from DB now. */
async function expectStamped(workId: string, ttlMs: number): Promise<void> {
  const window = (await leaseWindowMs(t.db, workId))!;
  expect(Math.abs(window - ttlMs)).toBeLessThanOrEqual(STAMP_TOLERANCE_MS);
  const left = await leaseLeftMs(workId);
  expect(left).toBeLessThanOrEqual(ttlMs + STAMP_TOLERANCE_MS);
  expect(left).toBeGreaterThan(ttlMs - READBACK_MS);
}

describe.each([
  { label: '−1 h', skewMs: -HOUR },
  { label: '+1 h', skewMs: HOUR },
])('the Node server with its clock skewed $label', ({ label, skewMs }) => {
  let server: RunningServer;
  let admin: string;
  let platform: string;
  const measured: string[] = [];

  beforeAll(async () => {
    server = await startServer({
      databaseUrl: t.url!,
      env: {
        NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${pathToFileURL(PRELOAD).href}`.trim(),
        TEST_CLOCK_SKEW_MS: String(skewMs),
      },
    });
    admin = await apiKey(t.db, 'admin');
    platform = await apiKey(t.db, 'platform');
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
  });

  async function call(
    method: string,
    route: string,
    key: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Response> {
    return fetch(`${server.baseURL}${route}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
  }

  /** A self_hosted environment with a key and one queued tool_exec item on the poll lane. */
  async function pollSetup() {
    const env = await environmentWithKey(t.db, 'self_hosted');
    const { work } = await enqueue(t.db, {
      environmentId: env.environmentId,
      sessionId: env.sessionId,
      kind: 'tool_exec',
    });
    return { env, workId: work.id, base: `/v1/environments/${env.environmentId}/work` };
  }

  it('the skew is in effect in the serving process (its own clock, read while answering)', async () => {
    const res = await call('GET', '/v1/environments', admin);
    expect(res.status).toBe(200);
    const processClock = res.headers.get('x-test-process-clock');
    expect(processClock, 'the skew-clock preload did not load in the server').not.toBeNull();
    const offset = Date.parse(processClock!) - (await dbNowMs());
    expect(Math.abs(offset - skewMs)).toBeLessThan(5_000);
    measured.push(`process clock ${(offset / 60_000).toFixed(1)} min off the DB's`);
  });

  it('a polled-but-unacked item is not re-offered before reclaim_older_than_ms by DB time, and is right after', async () => {
    const { workId, env, base } = await pollSetup();
    const poll = () => call('GET', `${base}/poll?reclaim_older_than_ms=5000`, env.key);
    const first = await poll();
    expect(((await first.json()) as { id: string }).id).toBe(workId);
    await expectStamped(workId, 5_000);
    expect(await (await poll()).json()).toBeNull();
    // 2 s of the reservation left by the database's clock: still not re-offered.
    await t.db.execute(
      sql`UPDATE work_items SET lease_expires_at = clock_timestamp() + interval '2 seconds' WHERE id = ${workId}`,
    );
    expect(await (await poll()).json()).toBeNull();
    await t.db.execute(
      sql`UPDATE work_items SET lease_expires_at = clock_timestamp() - interval '1 millisecond' WHERE id = ${workId}`,
    );
    // Re-offered, under a fresh id (every re-hand-out mints one), for the same session.
    const again = (await (await poll()).json()) as { id: string; data: { id: string } } | null;
    expect(again?.data.id).toBe(env.sessionId);
    expect(again?.id).not.toBe(workId);
  });

  it('ack stamps the 30 s startup lease and heartbeats stamp their ttl by DB time; the echo round-trips', async () => {
    const { workId, env, base } = await pollSetup();
    await call('GET', `${base}/poll`, env.key);
    expect((await call('POST', `${base}/${workId}/ack`, env.key)).status).toBe(200);
    await expectStamped(workId, 30_000);

    const beat = (expected: string) =>
      call(
        'POST',
        `${base}/${workId}/heartbeat?expected_last_heartbeat=${encodeURIComponent(expected)}&desired_ttl_seconds=10`,
        env.key,
      );
    const first = await beat('NO_HEARTBEAT');
    expect(first.status).toBe(200);
    const one = (await first.json()) as {
      last_heartbeat: string;
      ttl_seconds: number;
      lease_extended: boolean;
    };
    expect(one).toMatchObject({ ttl_seconds: 10, lease_extended: true });
    await expectStamped(workId, 10_000);
    // The echo is the database's stamp: within a moment of the database's clock, whatever ours says.
    expect(Math.abs(Date.parse(one.last_heartbeat) - (await dbNowMs()))).toBeLessThan(READBACK_MS);

    const second = await beat(one.last_heartbeat);
    expect(second.status).toBe(200);
    const two = (await second.json()) as { last_heartbeat: string };
    expect(two.last_heartbeat).not.toBe(one.last_heartbeat);
    expect((await beat(one.last_heartbeat)).status).toBe(412);
  });

  it('platform claim and extend stamp ttl_seconds by DB time', async () => {
    const s = await setupSession(t.db, 'cloud');
    const { work } = await enqueue(t.db, { ...s, kind: 'model_turn' });
    const claimed = await call('POST', '/v1/platform/work/claim', platform, {
      kind: 'model_turn',
      ttl_seconds: 45,
    });
    const item = (await claimed.json()) as { id: string; lease: string };
    expect(item.id).toBe(work.id);
    await expectStamped(work.id, 45_000);
    const extended = await call('POST', `/v1/platform/work/${work.id}/extend`, platform, {
      lease: item.lease,
      ttl_seconds: 20,
    });
    expect(extended.status).toBe(200);
    await expectStamped(work.id, 20_000);
  });

  it('workers_polling counts a worker for 30 s of DB time', async () => {
    const { env, base } = await pollSetup();
    await call('GET', `${base}/poll`, env.key, undefined, { 'anthropic-worker-id': 'skewed-worker' });
    const polling = async () =>
      ((await (await call('GET', `${base}/stats`, env.key)).json()) as { workers_polling: number })
        .workers_polling;
    expect(await polling()).toBe(1);
    await agePoll(t.db, env.environmentId, 'skewed-worker', 29_000);
    expect(await polling()).toBe(1);
    await agePoll(t.db, env.environmentId, 'skewed-worker', 31_000);
    expect(await polling()).toBe(0);
  });

  it('a revoked key is refused on the very next request', async (ctx) => {
    const { env, base } = await pollSetup();
    // Twice, so the key sits in the credential cache when it is revoked.
    expect((await call('GET', `${base}/stats`, env.key)).status).toBe(200);
    expect((await call('GET', `${base}/stats`, env.key)).status).toBe(200);
    const revoked = await call(
      'POST',
      `/v1/environments/${env.environmentId}/keys/${env.keyId}/revoke`,
      admin,
    );
    expect(revoked.status).toBe(204);
    expect((await call('GET', `${base}/stats`, env.key)).status).toBe(401);

    recordFault(ctx, {
      load: 'the Node server over HTTP: poll, ack, heartbeat, platform claim/extend, stats, revoke',
      faults: `app process clock skewed ${label} (injected Date)`,
      result: `${measured.join('; ')}; every lease, reservation and heartbeat ttl stamped within ${STAMP_TOLERANCE_MS} ms of the configured; 0 early re-offers; heartbeat echo round-trips; workers_polling window by DB time; revocation immediate`,
    });
  });
});

describe.each([
  { label: '−1 h', skewMs: -HOUR },
  { label: '+1 h', skewMs: HOUR },
])('the lease keeper and housekeeping in a process skewed $label', ({ skewMs }) => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('the keeper renews to ttl by DB time; housekeeping finalizes and reaps exactly what DB time says is old', async () => {
    // Only Date moves: timers stay real, and the keeper runs on its own (manual) clock.
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + skewMs);

    const s = await setupSession(t.db, 'cloud');
    await enqueue(t.db, { ...s, kind: 'model_turn' });
    const item = (await claim(t.db, 'model_turn', 9_000))!;
    await expectStamped(item.id, 9_000);
    // Backdated by 5 s before the keeper starts: its renewal at ttl/3 must restore a full ttl
    // from the database's now.
    await backdateLease(t.db, item, 5_000);
    const clock = new ManualClock();
    const keeper = keepLease(t.db, item, { ttlMs: 9_000, clock });
    await clock.advance(3_000);
    await expect.poll(() => leaseLeftMs(item.id), { timeout: 5_000 }).toBeGreaterThan(9_000 - READBACK_MS);
    expect(await keeper.close()).toBeNull();
    expect(await leaseLeftMs(item.id)).toBeLessThanOrEqual(9_000 + STAMP_TOLERANCE_MS);

    // Housekeeping: a wind-down whose lease lapsed is finalized, one with 1 s left is not;
    // a worker silent 31 s is reaped, one silent 29 s is not.
    const environmentId = await createEnvironment(t.db, 'self_hosted');
    const lapsed = await stoppingItem(environmentId, '-1 second');
    const live = await stoppingItem(environmentId, '1 second');
    await t.db.execute(
      sql`INSERT INTO worker_polls (environment_id, worker_id, last_polled_at)
          VALUES (${environmentId}, 'old', now() - interval '31 seconds'), (${environmentId}, 'recent', now() - interval '29 seconds')`,
    );
    await runOnce({ db: t.db });
    const states = await t.db.execute(
      sql`SELECT id, state FROM work_items WHERE id IN (${lapsed}, ${live}) ORDER BY id`,
    );
    expect(
      Object.fromEntries(
        (states as unknown as { rows: { id: string; state: string }[] }).rows.map((r) => [r.id, r.state]),
      ),
    ).toEqual({
      [lapsed]: 'stopped',
      [live]: 'stopping',
    });
    const polls = await t.db.execute(
      sql`SELECT worker_id FROM worker_polls WHERE environment_id = ${environmentId} ORDER BY worker_id`,
    );
    expect((polls as unknown as { rows: { worker_id: string }[] }).rows.map((r) => r.worker_id)).toEqual([
      'recent',
    ]);
  });
});

/** A poll-lane item winding down (`stopping`) whose lease ends `offset` from the DB's now. */
async function stoppingItem(environmentId: string, offset: string): Promise<string> {
  const sessionId = await createSession(t.db, environmentId);
  const { work } = await enqueue(t.db, { environmentId, sessionId, kind: 'tool_exec' });
  await t.db.execute(
    sql`UPDATE work_items SET state = 'stopping', stop_requested_at = now(),
               lease_expires_at = now() + ${offset}::interval WHERE id = ${work.id}`,
  );
  return work.id;
}

/**
 * Wall-clock reads in src/ (a lint guard). Lease arithmetic belongs to the database, and
 * process time to the monotonic clock seam (src/clock.ts); each wall-clock read that remains
 * is listed with why it cannot move a lease. A new one fails here until it is justified.
 */
const WALL_CLOCK_ALLOWED: Array<{ file: string; text: string; why: string }> = [
  {
    file: 'src/journal/codec.ts',
    text: 'time: new Date(m.info.timestampNanos / 1e6),',
    why: 'renders the NATS server’s stamp of a record; reads no clock',
  },
  {
    file: 'src/turns/anthropic-model.ts',
    text: 'export function retryAfterMs(headers: Headers, now: number = Date.now()): number | null {',
    why: 'a `retry-after` HTTP date is only meaningful against the clock; it sets a wait, never a lease',
  },
  {
    file: 'src/cli/commands/stats.ts',
    text: 'const at = new Date().toISOString();',
    why: 'labels a `stats --watch` sample for the person reading it; never sent to the server',
  },
];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return sourceFiles(full);
    return full.endsWith('.ts') ? [full] : [];
  });
}

describe('wall-clock reads in src/', () => {
  it('every Date.now(), new Date() and Date() outside the allow-list is a finding; the allow-list has no stale entries', () => {
    const WALL_CLOCK = /\bDate\.now\s*\(|\bnew\s+Date\s*\(|(?<![\w.])Date\s*\(|\bperformance\.timeOrigin\b/;
    const found: Array<{ file: string; text: string }> = [];
    for (const file of sourceFiles(path.join(ROOT, 'src'))) {
      const rel = path.relative(ROOT, file);
      for (const line of readFileSync(file, 'utf8').split('\n')) {
        const code = line.replace(/\/\/.*$/, '').trim();
        if (code.startsWith('*') || code.startsWith('/*')) continue;
        if (WALL_CLOCK.test(code)) found.push({ file: rel, text: code });
      }
    }
    const allowed = (f: { file: string; text: string }) =>
      WALL_CLOCK_ALLOWED.some((a) => a.file === f.file && a.text === f.text);
    expect(found.filter((f) => !allowed(f))).toEqual([]);
    for (const a of WALL_CLOCK_ALLOWED) expect(found).toContainEqual({ file: a.file, text: a.text });
  });

  it('no SQL in src/ stamps time with a bound parameter from the process', () => {
    // A timestamp computed in the process and bound into SQL would carry the skew into a row.
    const BOUND_TIME = /\$\{[^}]*(Date|toISOString|getTime)[^}]*\}/;
    const offenders: string[] = [];
    for (const file of sourceFiles(path.join(ROOT, 'src'))) {
      const text = readFileSync(file, 'utf8');
      for (const [i, line] of text.split('\n').entries()) {
        if (BOUND_TIME.test(line)) offenders.push(`${path.relative(ROOT, file)}:${i + 1}: ${line.trim()}`);
      }
    }
    expect(offenders).toEqual([]);
  });
});
