/** The test database as a Worker test reaches it: the Neon driver through the local wsproxy. */
import { env } from 'cloudflare:test';
import { connectNeon } from '../../src/db/drivers/neon.js';

export const bindings = env as unknown as { DATABASE_URL: string; LEASEHOLD_NEON_WS_PROXY: string };

/** Runs `fn` on a connection of its own, closed after. */
export async function withDb<T>(fn: (db: ReturnType<typeof connectNeon>['db']) => Promise<T>): Promise<T> {
  const conn = connectNeon(bindings.DATABASE_URL, { localProxy: bindings.LEASEHOLD_NEON_WS_PROXY });
  try {
    return await fn(conn.db);
  } finally {
    await conn.close();
  }
}
