/**
 * Connection-pool exhaustion (docs/guarantees.md): every pooled connection of the Node server
 * stuck behind a lock another session holds. Requests that cannot get a connection must be
 * answered 503 with `retry-after` once the acquire timeout passes — never left to hang — and
 * the server must carry on as soon as the lock goes. Requests whose statements fold together
 * (claims) must not queue behind the stuck one: they go out on a connection of their own.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiKey } from '../helpers/api.js';
import { useTestDb } from '../helpers/db.js';
import { seedClaimBacklog } from '../helpers/factories.js';
import { recordFault } from '../helpers/faults.js';
import { type RunningServer, startServer } from '../helpers/server.js';

const POOL_SIZE = 2;
const ACQUIRE_TIMEOUT_MS = 500;
const REQUESTS = 10;

const t = useTestDb('pg');
let server: RunningServer;

beforeAll(async () => {
  server = await startServer({
    databaseUrl: t.url!,
    env: {
      LEASEHOLD_DB_POOL_SIZE: String(POOL_SIZE),
      LEASEHOLD_DB_ACQUIRE_TIMEOUT_MS: String(ACQUIRE_TIMEOUT_MS),
    },
  });
});

afterAll(async () => {
  await server?.stop();
});

/** A platform-lane POST with `key`: its status (201 read as 200), retry-after, body and time taken. */
async function post(key: string, route: string, body: unknown) {
  const sentAt = performance.now();
  const res = await fetch(`${server.baseURL}/v1/platform/work${route}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const answer = (await res.json()) as { id?: string; error?: { type: string } } | null;
  return {
    status: res.status === 201 ? 200 : res.status,
    retryAfter: res.headers.get('retry-after'),
    body: answer,
    ms: performance.now() - sentAt,
  };
}

/** A session holding work_items in ACCESS EXCLUSIVE mode until its ROLLBACK. */
async function lockWorkItems(): Promise<pg.Client> {
  const blocker = new pg.Client({ connectionString: t.url! });
  await blocker.connect();
  await blocker.query('BEGIN');
  await blocker.query('LOCK TABLE work_items IN ACCESS EXCLUSIVE MODE');
  return blocker;
}

describe('an exhausted connection pool', () => {
  it('answers the requests it cannot serve 503 with retry-after within the acquire timeout, and recovers when connections free up', async (ctx) => {
    const environmentId = await seedClaimBacklog(t.db, 50, 'model_turn');
    const key = await apiKey(t.db, 'platform');
    const claim = () => post(key, '/claim', { kind: 'model_turn', ttl_seconds: 60 });
    // Enqueues, each its own statement (claims would share one: see the next test).
    let sessions = 0;
    const enqueue = () =>
      post(key, '', {
        environment_id: environmentId,
        session_id: `sesn_pool_${++sessions}`,
        kind: 'model_turn',
      });
    // The key is resolved once before the lock, so every request below reaches its statement.
    expect((await claim()).status).toBe(200);

    const blocker = await lockWorkItems();
    let settled = 0;
    const pending = Array.from({ length: REQUESTS }, () => enqueue().finally(() => settled++));
    // The requests that got a connection wait on the lock; the rest give up on the pool. The
    // lock goes only once those have been answered, so a hang fails the test by its timeout.
    while (settled < REQUESTS - POOL_SIZE) await new Promise((r) => setTimeout(r, 10));
    const early = settled;
    await blocker.query('ROLLBACK');
    await blocker.end();
    const all = await Promise.all(pending);
    const afterwards = await claim();

    const unavailable = all.filter((r) => r.status === 503);
    const served = all.filter((r) => r.status === 200);
    const slowest = Math.max(...unavailable.map((r) => r.ms));
    recordFault(ctx, {
      load: `${REQUESTS} concurrent enqueues, pool of ${POOL_SIZE}, acquire timeout ${ACQUIRE_TIMEOUT_MS} ms`,
      faults: 'every pooled connection blocked by an ACCESS EXCLUSIVE lock',
      result:
        `${unavailable.length}/${REQUESTS - POOL_SIZE} without a connection answered 503 + retry-after ` +
        `(slowest ${Math.round(slowest)} ms); the ${served.length} holding connections finished 200 once the lock went`,
    });

    // Which requests got a connection is the pool's business; what matters is the count.
    expect(early).toBe(REQUESTS - POOL_SIZE);
    expect(served).toHaveLength(POOL_SIZE);
    expect(unavailable).toHaveLength(REQUESTS - POOL_SIZE);
    for (const r of unavailable) {
      expect(r.retryAfter).toBe('1');
      expect(r.body?.error?.type).toBe('overloaded_error');
      expect(r.ms).toBeLessThan(ACQUIRE_TIMEOUT_MS + 2_000);
    }
    expect(afterwards.status).toBe(200);
  });

  it('claims that fold behind a statement stuck on a lock go out on a connection of their own, and are all served once it goes', async (ctx) => {
    await seedClaimBacklog(t.db, 20, 'web_exec');
    const key = await apiKey(t.db, 'platform');
    const claim = () => post(key, '/claim', { kind: 'web_exec', ttl_seconds: 60 });
    expect((await claim()).status).toBe(200);
    const blocker = await lockWorkItems();
    const waitingOnLock = async () =>
      (
        await blocker.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`,
        )
      ).rows[0]!.n;
    const pending = Array.from({ length: 6 }, () => claim());
    // The first claim goes alone and waits on the lock; the five behind it go together once it
    // has stalled, on the pool's other connection. Without that they would wait for it.
    const deadline = performance.now() + 5_000;
    let waiting = await waitingOnLock();
    while (waiting < POOL_SIZE && performance.now() < deadline) {
      await new Promise((r) => setTimeout(r, 10));
      waiting = await waitingOnLock();
    }
    await blocker.query('ROLLBACK');
    await blocker.end();
    const all = await Promise.all(pending);
    recordFault(ctx, {
      load: '6 concurrent claims of one kind (they fold), pool of 2',
      faults: 'work_items locked ACCESS EXCLUSIVE while they arrive',
      result: `${waiting} statements waiting on the lock at once; ${all.filter((r) => r.status === 200 && r.body).length}/6 served distinct items once it went`,
    });
    expect(waiting).toBe(POOL_SIZE);
    expect(all.map((r) => r.status)).toEqual(Array(6).fill(200));
    expect(new Set(all.map((r) => r.body?.id)).size).toBe(6);
  });
});
