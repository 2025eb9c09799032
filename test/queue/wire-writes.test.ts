import { describe, expect, it } from 'vitest';
import type { SqlHandle } from '../../src/db/handle.js';
import {
  directCalls,
  type HeartbeatCall,
  NO_HEARTBEAT,
  type WireWrite,
  type WireWriteAnswer,
  wireWritesMany,
  writeAlone,
} from '../../src/queue/index.js';
import { useTestDb } from '../helpers/db.js';
import { readWork, setupSession, wireWork } from '../helpers/factories.js';
import { runTwins, type TwinCase, type TwinItem, type TwinStage, workShape } from '../helpers/twins.js';

const STAGES: TwinStage[] = [
  'queued',
  'reserved',
  'starting',
  'active',
  'stopping',
  'stopped',
  'foreign',
  'claim_lane',
  'missing',
];

/** What a heartbeat echoes: nothing yet, the item's own last heartbeat, one it never had, or no timestamp. */
const ECHOES: Record<string, (item: TwinItem) => string> = {
  first: () => NO_HEARTBEAT,
  current: (item) => item.lastHeartbeat ?? '2026-01-01T00:00:00Z',
  stale: () => '2026-01-01T00:00:00.000001+02:00',
  garbage: () => 'yesterday',
};

/** Every write of the work API on an item at every stage: acks, four heartbeats, two stops. */
function everyWrite(): TwinCase<WireWrite>[] {
  const cases: TwinCase<WireWrite>[] = [];
  for (const stage of STAGES) {
    const on = (item: TwinItem) => ({ environmentId: item.environmentId, workId: item.id });
    cases.push({ name: `${stage} ack`, stage, call: (item) => ({ op: 'ack', ...on(item) }) });
    for (const [echo, expected] of Object.entries(ECHOES)) {
      // A ttl of its own per case: each call's lease must be its own.
      const ttlSeconds = 10 + cases.length;
      cases.push({
        name: `${stage} heartbeat ${echo}`,
        stage,
        call: (item) => ({ op: 'heartbeat', ...on(item), expected: expected(item), ttlSeconds }),
      });
    }
    for (const force of [true, false]) {
      const name = `${stage} stop ${force ? 'force' : 'graceful'}`;
      cases.push({ name, stage, call: (item) => ({ op: 'stop', ...on(item), force }) });
    }
  }
  return cases;
}

function shape(a: WireWriteAnswer): unknown {
  if (a.op === 'heartbeat') return { ...a.result, lastHeartbeat: a.result.lastHeartbeat ? 'set' : null };
  return { ...a, work: workShape(a.work) };
}

describe.each(['pg', 'pglite'] as const)('wireWritesMany (%s)', (driver) => {
  const t = useTestDb(driver);

  it('writes every item and answers every write as its operation alone does, every kind and stage in one statement', async () => {
    const { alone, many, errors } = await runTwins(t.db, everyWrite(), {
      alone: (w) => writeAlone(directCalls(t.db), w),
      many: (writes) => wireWritesMany(t.db, writes),
      key: (w) => w.workId,
      shape,
    });
    expect(many).toEqual(alone);
    // What the statement settles is exactly what the operations answer alone.
    expect(Object.keys(alone).filter((k) => !(k in errors))).toEqual([
      'queued ack',
      'queued stop force',
      'queued stop graceful',
      'reserved ack',
      'reserved stop force',
      'reserved stop graceful',
      'starting ack',
      'starting heartbeat first',
      'starting stop force',
      'starting stop graceful',
      'active ack',
      'active heartbeat current',
      'active stop force',
      'active stop graceful',
      'stopping ack',
      'stopping heartbeat current',
      'stopping stop force',
      'stopped ack',
      'stopped heartbeat current',
    ]);
    expect(new Set(Object.values(errors))).toEqual(
      new Set(['HeartbeatMismatchError', 'WorkNotFoundError', 'WorkConflictError']),
    );
    expect(many['active heartbeat current']!.answer).toMatchObject({ state: 'active', leaseExtended: true });
    expect(many['stopping heartbeat current']!.answer).toMatchObject({
      state: 'stopping',
      leaseExtended: false,
    });
    expect(many['active stop graceful']!.answer).toMatchObject({ work: { state: 'stopping' } });
  });

  it('supersedes each echo it accepted: the same heartbeats sent again no longer match', async () => {
    const calls = await activeHeartbeats(t.db, 3);
    const first = await wireWritesMany(t.db, calls);
    expect(first.size).toBe(3);
    expect(await wireWritesMany(t.db, calls)).toEqual(new Map());
    for (const c of calls) {
      const answer = first.get(c.workId) as Extract<WireWriteAnswer, { op: 'heartbeat' }>;
      expect((await readWork(t.db, c.workId))!.lastHeartbeat).toBe(answer.result.lastHeartbeat);
    }
  });

  it('refuses two writes of one item, which one statement could not both apply, before sending anything', async () => {
    const [call] = await activeHeartbeats(t.db, 1);
    const stop: WireWrite = {
      op: 'stop',
      environmentId: call!.environmentId,
      workId: call!.workId,
      force: true,
    };
    await expect(wireWritesMany(t.db, [call!, stop])).rejects.toThrow(TypeError);
    expect((await readWork(t.db, call!.workId))!.state).toBe('active');
  });
});

async function activeHeartbeats(
  db: SqlHandle,
  n: number,
): Promise<Array<{ op: 'heartbeat' } & HeartbeatCall>> {
  const calls: Array<{ op: 'heartbeat' } & HeartbeatCall> = [];
  for (let i = 0; i < n; i++) {
    const target = await setupSession(db);
    const { id, lastHeartbeat } = await wireWork(db, target, 'active');
    calls.push({
      op: 'heartbeat',
      environmentId: target.environmentId,
      workId: id,
      expected: lastHeartbeat!,
      ttlSeconds: 30,
    });
  }
  return calls;
}
