/**
 * Connection-pool exhaustion (docs/guarantees.md): every pooled connection of the Node server
 * stuck behind a lock another session holds. Requests that cannot get a connection must be
 * answered 503 with `retry-after` once the acquire timeout passes — never left to hang — and
 * the server must carry on as soon as the lock goes.
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

describe('an exhausted connection pool', () => {
  it('answers the requests it cannot serve 503 with retry-after within the acquire timeout, and recovers when connections free up', async (ctx) => {
    await seedClaimBacklog(t.db, 50, 'model_turn');
    const key = await apiKey(t.db, 'platform');
    const claim = async () => {
      const sentAt = performance.now();
      const res = await fetch(`${server.baseURL}/v1/platform/work/claim`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ kind: 'model_turn', ttl_seconds: 60 }),
      });
      const body = (await res.json()) as { error?: { type: string } } | null;
      return {
        status: res.status,
        retryAfter: res.headers.get('retry-after'),
        body,
        ms: performance.now() - sentAt,
      };
    };
    // The key is resolved once before the lock, so every request below reaches the claim.
    expect((await claim()).status).toBe(200);

    const blocker = new pg.Client({ connectionString: t.url! });
    await blocker.connect();
    await blocker.query('BEGIN');
    await blocker.query('LOCK TABLE work_items IN ACCESS EXCLUSIVE MODE');
    let settled = 0;
    const pending = Array.from({ length: REQUESTS }, () => claim().finally(() => settled++));
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
      load: `${REQUESTS} concurrent claims, pool of ${POOL_SIZE}, acquire timeout ${ACQUIRE_TIMEOUT_MS} ms`,
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
});
