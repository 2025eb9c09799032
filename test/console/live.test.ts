import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { runOnce } from '../../src/housekeeping/index.js';
import { newId } from '../../src/ids.js';
import { enqueue } from '../../src/queue/enqueue.js';
import { poll } from '../../src/queue/poll.js';
import type { QueueSample } from '../../src/queue/samples.js';
import { environmentWithKey } from '../helpers/api.js';
import { consoleSession } from '../helpers/console.js';
import { useTestDb } from '../helpers/db.js';
import { createEnvironment, createSession } from '../helpers/factories.js';
import { expectError } from '../helpers/management.js';

interface Summary {
  environmentId: string;
  depth: number;
  pending: number;
  oldestQueuedAt: string | null;
  workersPolling: number;
  claimQueued: number;
}

describe('console live data', () => {
  const t = useTestDb('pglite');

  /** `n` queued tool_exec items in `environmentId`, each in its own session. */
  const queue = async (environmentId: string, n: number) => {
    for (let i = 0; i < n; i++)
      await enqueue(t.db, {
        environmentId,
        sessionId: await createSession(t.db, environmentId),
        kind: 'tool_exec',
      });
  };

  it('/live/summaries?ids=a,b answers each environment’s figures, equal to its work stats', async () => {
    const a = await environmentWithKey(t.db);
    const b = await environmentWithKey(t.db);
    await queue(a.environmentId, 3);
    await poll(t.db, a.environmentId, 60_000);
    await enqueue(t.db, { ...b, kind: 'model_turn' });
    const s = await consoleSession(t.db);
    const res = await s.page(`/console/live/summaries?ids=${a.environmentId},${b.environmentId}`);
    expect(res.status).toBe(200);
    const { data } = (await res.json()) as { data: Summary[] };
    expect(data.map((d) => d.environmentId).sort()).toEqual([a.environmentId, b.environmentId].sort());
    for (const env of [a, b]) {
      const summary = data.find((d) => d.environmentId === env.environmentId)!;
      const statsRes = await s.app.request(`/v1/environments/${env.environmentId}/work/stats`, {
        headers: { authorization: `Bearer ${s.key}` },
      });
      const stats = (await statsRes.json()) as Record<string, unknown>;
      expect({
        depth: summary.depth,
        pending: summary.pending,
        oldest_queued_at: summary.oldestQueuedAt,
        workers_polling: summary.workersPolling,
      }).toEqual({
        depth: stats.depth,
        pending: stats.pending,
        oldest_queued_at: stats.oldest_queued_at,
        workers_polling: stats.workers_polling,
      });
    }
    expect(data.find((d) => d.environmentId === a.environmentId)).toMatchObject({ depth: 2, pending: 1 });
    expect(data.find((d) => d.environmentId === b.environmentId)).toMatchObject({ depth: 0, claimQueued: 1 });
  });

  it('more than 100 ids, or an id that is not an environment id, is a 400 JSON error', async () => {
    const s = await consoleSession(t.db);
    const many = Array.from({ length: 101 }, () => newId('env')).join(',');
    await expectError(await s.page(`/console/live/summaries?ids=${many}`), 400, 'invalid_request_error');
    for (const bad of ['a.b', 'env_a,%3Cscript%3E', `env_a,${'x'.repeat(129)}`])
      await expectError(await s.page(`/console/live/summaries?ids=${bad}`), 400, 'invalid_request_error');
    const hundred = Array.from({ length: 100 }, () => newId('env')).join(',');
    expect((await s.page(`/console/live/summaries?ids=${hundred}`)).status).toBe(200);
  });

  it('the samples endpoint answers the samples housekeeping wrote, oldest first, and the live summary as now', async () => {
    const environmentId = await createEnvironment(t.db, 'self_hosted');
    await queue(environmentId, 1);
    await runOnce({ db: t.db });
    // That sample becomes five minutes old; the next pass writes the current minute's.
    await t.db.execute(
      sql`UPDATE queue_samples SET minute = minute - interval '5 minutes' WHERE environment_id = ${environmentId}`,
    );
    await queue(environmentId, 2);
    await runOnce({ db: t.db });
    await queue(environmentId, 1);
    const s = await consoleSession(t.db);
    const res = await s.page(`/console/live/environments/${environmentId}/samples`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { samples: QueueSample[]; now: Summary };
    expect(body.samples.map((x) => x.depth)).toEqual([1, 3]);
    expect(Date.parse(body.samples[0]!.minute)).toBeLessThan(Date.parse(body.samples[1]!.minute));
    expect(body.now).toMatchObject({ environmentId, depth: 4, pending: 0 });
  });
});
