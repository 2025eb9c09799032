import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { maybeRow } from '../../src/db/handle.js';
import { recordPoll } from '../../src/queue/index.js';
import { useTestDb } from '../helpers/db.js';
import { agePoll, createEnvironment, pollers } from '../helpers/factories.js';

describe.each(['pg', 'pglite'] as const)('recordPoll (%s)', (driver) => {
  const t = useTestDb(driver);

  /** How long ago (ms, database time) the worker last polled the environment. */
  async function ageMs(environmentId: string, workerId: string): Promise<number> {
    const row = await maybeRow<{ ms: number }>(
      t.db,
      sql`SELECT (extract(epoch FROM now() - last_polled_at) * 1000)::double precision AS ms
            FROM worker_polls WHERE environment_id = ${environmentId} AND worker_id = ${workerId}`,
    );
    return row!.ms;
  }

  it('records one row per (environment, worker), refreshing it on every poll', async () => {
    const env = await createEnvironment(t.db);
    await recordPoll(t.db, env, 'w1');
    await recordPoll(t.db, env, 'w1');
    expect(await pollers(t.db, env)).toEqual(['w1']);
    await agePoll(t.db, env, 'w1', 3_600_000);
    await recordPoll(t.db, env, 'w1');
    expect(await ageMs(env, 'w1')).toBeLessThan(60_000);
    expect(await pollers(t.db, env)).toEqual(['w1']);
  });

  it('the same worker id in two environments is two rows', async () => {
    const a = await createEnvironment(t.db);
    const b = await createEnvironment(t.db);
    await recordPoll(t.db, a, 'w1');
    await recordPoll(t.db, b, 'w1');
    expect(await pollers(t.db, a)).toEqual(['w1']);
    expect(await pollers(t.db, b)).toEqual(['w1']);
  });

  it("reaps the environment's other rows older than 30 s, keeping recent ones and the caller's own", async () => {
    const env = await createEnvironment(t.db);
    for (const w of ['aged', 'recent', 'me', 'borderline']) await recordPoll(t.db, env, w);
    await agePoll(t.db, env, 'aged', 31_000);
    await agePoll(t.db, env, 'me', 3_600_000);
    await agePoll(t.db, env, 'borderline', 29_000);
    await recordPoll(t.db, env, 'me');
    expect(await pollers(t.db, env)).toEqual(['borderline', 'me', 'recent']);
    expect(await ageMs(env, 'me')).toBeLessThan(60_000);
  });

  it("never reaps another environment's rows", async () => {
    const a = await createEnvironment(t.db);
    const b = await createEnvironment(t.db);
    await recordPoll(t.db, b, 'stale');
    await agePoll(t.db, b, 'stale', 3_600_000);
    await recordPoll(t.db, a, 'w1');
    expect(await pollers(t.db, b)).toEqual(['stale']);
  });

  it('records polls in a cloud environment too (stats gates them instead)', async () => {
    const cloud = await createEnvironment(t.db, 'cloud');
    await recordPoll(t.db, cloud, 'w1');
    expect(await pollers(t.db, cloud)).toEqual(['w1']);
  });

  it('fails for an unknown environment, leaving the caller to log and carry on', async () => {
    await expect(recordPoll(t.db, 'env_missing', 'w1')).rejects.toThrow();
    const row = await maybeRow<{ n: number }>(t.db, sql`SELECT count(*)::int AS n FROM worker_polls`);
    expect(row!.n).toBe(0);
  });
});
