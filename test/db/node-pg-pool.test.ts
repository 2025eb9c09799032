import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { DEFAULT_DB_IDLE_TIMEOUT_MS } from '../../src/config.js';
import { connectPg } from '../../src/db/drivers/node-pg.js';
import { useTestDb } from '../helpers/db.js';

describe('the pg pool', () => {
  const t = useTestDb('pg');

  it('keeps an unused connection 60 s by default, not pg’s 10 s, so a lull does not cost the next burst its backends', async () => {
    const conn = connectPg(t.url!);
    try {
      expect(DEFAULT_DB_IDLE_TIMEOUT_MS).toBe(60_000);
      expect(conn.pool.options.idleTimeoutMillis).toBe(DEFAULT_DB_IDLE_TIMEOUT_MS);
    } finally {
      await conn.close();
    }
  });

  it('closes a connection once it has been unused for idleTimeoutMs', async () => {
    const conn = connectPg(t.url!, { idleTimeoutMs: 100 });
    try {
      await conn.db.execute(sql`SELECT 1`);
      expect(conn.pool.totalCount).toBe(1);
      // pg-pool's own timer closes it; bounded, so a pool that never does fails here.
      const deadline = performance.now() + 5_000;
      while (conn.pool.totalCount > 0 && performance.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(conn.pool.totalCount).toBe(0);
    } finally {
      await conn.close();
    }
  });
});
