/**
 * LEASEHOLD_ADMIN_KEY rotated across Node replicas on one database: a replica restarted with
 * the replaced value (not yet redeployed) must not take the key back from the replicas that
 * run the new one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDb, type TestDb } from '../helpers/db.js';
import { type RunningServer, startServer } from '../helpers/server.js';

describe('LEASEHOLD_ADMIN_KEY rotated across Node replicas', () => {
  let t: TestDb;
  const servers: RunningServer[] = [];
  beforeAll(async () => {
    t = await openTestDb('pg');
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await t?.close();
  });

  const status = async (server: RunningServer, key: string) =>
    (await fetch(`${server.baseURL}/v1/api_keys`, { headers: { authorization: `Bearer ${key}` } })).status;

  it('a replica restarted with the replaced value takes nothing back, says so, and the new value works on every replica', async () => {
    // startServer configures each start with a fresh LEASEHOLD_ADMIN_KEY unless given one.
    const first = await startServer({ databaseUrl: t.url! });
    servers.push(first);
    const older = first.adminKey;
    expect(await status(first, older)).toBe(200);

    const rotated = await startServer({ databaseUrl: t.url! });
    servers.push(rotated);
    const newer = rotated.adminKey;
    expect(newer).not.toBe(older);
    // The old replica crashes and comes back with the old value while the rollout goes on.
    await first.stop();
    const restarted = await startServer({ databaseUrl: t.url!, adminKey: older });
    servers.push(restarted);

    expect(restarted.output()).toContain('LEASEHOLD_ADMIN_KEY holds a value that a newer one has replaced');
    expect(rotated.output()).not.toContain('a newer one has replaced');
    for (const server of [rotated, restarted]) {
      expect(await status(server, newer)).toBe(200);
      expect(await status(server, older)).toBe(401);
    }
  });
});
