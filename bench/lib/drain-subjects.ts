/**
 * What the drain scenarios (claim, batch) share: an admin pool for seeding, Leasehold's own
 * pool of `concurrency` warmed connections, and the graphile-worker and pg-boss anchors, all
 * opened once per scenario and closed together.
 */
import pg from 'pg';
import { connectPg, type PgConnection } from '../../src/db/drivers/node-pg.js';
import { type GraphileAnchor, graphileAnchor } from '../anchors/graphile.js';
import { type PgBossAnchor, pgBossAnchor } from '../anchors/pgboss.js';
import { resetLeasehold, seedClaimBacklog } from './db.js';
import { warm } from './leasehold-drain.js';

export interface DrainSubjects {
  conn: PgConnection;
  graphile: GraphileAnchor;
  boss: PgBossAnchor;
  /** Empties Leasehold's tables and seeds `n` queued model_turn items, settled. */
  seed(n: number): Promise<void>;
  close(): Promise<void>;
}

export async function openDrainSubjects(url: string, concurrency: number): Promise<DrainSubjects> {
  const admin = new pg.Pool({ connectionString: url, max: 2 });
  const conn = connectPg(url, { max: concurrency });
  await warm(conn.pool, concurrency);
  const graphile = await graphileAnchor(url);
  const boss = await pgBossAnchor(url);
  return {
    conn,
    graphile,
    boss,
    async seed(n) {
      await resetLeasehold(admin);
      await seedClaimBacklog(admin, n);
    },
    async close() {
      await boss.close();
      await graphile.close();
      await conn.close();
      await admin.end();
    },
  };
}
