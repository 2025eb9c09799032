import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { sql } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  check,
  ensureJournalStream,
  FencedError,
  Journal,
  read,
  ScriptedModel,
} from '../../src/journal/index.js';
import { claim, enqueue, type Item } from '../../src/queue/index.js';
import { runDurableTurn, taskForItem } from '../../src/turns/durable-turn.js';
import { useTestDb } from '../helpers/db.js';
import { readWork, setupSession } from '../helpers/factories.js';
import { useNatsServer } from '../helpers/nats.js';

const MINUTE = 60_000;

describe('durable turns: the claim lane bound to the journal', () => {
  const t = useTestDb('pg');
  const nats = useNatsServer();
  let nc: NatsConnection;
  beforeAll(async () => {
    nc = await nats.connect();
    await ensureJournalStream(await jetstreamManager(nc));
  });
  const js = () => jetstream(nc);

  async function claimedTurn(): Promise<Item> {
    const s = await setupSession(t.db, 'cloud');
    await enqueue(t.db, { ...s, kind: 'model_turn' });
    return (await claim(t.db, 'model_turn', MINUTE))!;
  }

  /** Lapses the item's lease as a stalled holder would let it, so the next claim reclaims it. */
  async function lapse(item: Item): Promise<void> {
    await t.db.execute(
      sql`UPDATE work_items SET lease_expires_at = now() - interval '1 second' WHERE id = ${item.id}`,
    );
  }

  it('derives the journal task from the item: session, kind, turn count, claim count, item id', async () => {
    const item = await claimedTurn();
    expect(await taskForItem(js(), item)).toEqual({
      runId: item.sessionId,
      stepId: 'model_turn',
      iteration: 0,
      attempt: 1,
      dispatchNonce: item.id,
      delivered: 1,
      streamSeq: 0,
    });
  });

  it('a successor takes over a stalled turn without repeating the model call or the unsafe tool', async () => {
    const model = new ScriptedModel({ text: 'deploy then read' }, { text: 'done' });
    const item = await claimedTurn();
    let releaseStall!: () => void;
    const stalled = new Promise<void>((resolve) => {
      releaseStall = resolve;
    });
    let deploys = 0;
    let reads = 0;
    let intentRecorded!: () => void;
    const intentSeen = new Promise<void>((resolve) => {
      intentRecorded = resolve;
    });

    // Holder A: records a model response and an unsafe tool intent, then stalls inside the tool.
    const first = runDurableTurn(
      { db: t.db, js: js() },
      { ...item },
      async ({ journal }) => {
        await journal.model(() => model.respond());
        await journal.tool({ name: 'deploy', input: { version: 7 } }, 'unsafe', async () => {
          deploys++;
          intentRecorded();
          await stalled;
          return { deployed: true };
        });
        return { action: 'complete' };
      },
      { ttlMs: MINUTE },
    );
    await intentSeen;
    expect(model.requests()).toBe(1);

    // The lease lapses; holder B reclaims the item and runs the same turn.
    await lapse(item);
    const successorItem = (await claim(t.db, 'model_turn', MINUTE))!;
    expect(successorItem).toMatchObject({ id: item.id, reclaimed: true, claims: 2 });
    let interrupted: unknown;
    const second = await runDurableTurn(
      { db: t.db, js: js() },
      successorItem,
      async ({ journal }) => {
        const plan = await journal.model(() => model.respond());
        expect(plan).toEqual({ text: 'deploy then read' });
        interrupted = await journal.tool({ name: 'deploy', input: { version: 7 } }, 'unsafe', async () => {
          deploys++;
          return { deployed: true };
        });
        await journal.tool({ name: 'read', input: { path: '/status' } }, 'safe', async () => {
          reads++;
          return { ok: true };
        });
        return { action: 'complete', output: { summary: 'recovered' } };
      },
      { ttlMs: MINUTE },
    );

    expect(second.outcome).toBe('committed');
    expect(model.requests()).toBe(1); // the recorded response was replayed, not re-requested
    expect(deploys).toBe(1); // the unsafe call was not started a second time…
    expect(interrupted).toMatchObject({
      interrupted: true,
      error: 'interrupted',
      key: `${item.sessionId}.model_turn.0.0`, // …and the model sees it as interrupted, with its key
    });
    expect(reads).toBe(1);
    expect((await readWork(t.db, item.id))!.state).toBe('stopped');

    // A wakes up: every write it attempts is fenced, and it leaves the item alone.
    releaseStall();
    expect(await first).toEqual({ outcome: 'fenced' });
    const records = await read(js(), item.sessionId, 'model_turn');
    expect(records.filter((r) => r.type === 'commit')).toHaveLength(1);
    expect(records.filter((r) => r.type === 'tool.result' && r.task.delivered === 1)).toHaveLength(0);
    const report = await check(nc, item.sessionId);
    expect(report.ok()).toBe(true);
  });

  it('the stale holder’s journal handle refuses every later write with FencedError', async () => {
    const item = await claimedTurn();
    const staleJournal = await Journal.open(js(), await taskForItem(js(), item));
    await staleJournal.append('entry', { note: 'working' });
    await lapse(item);
    const successor = (await claim(t.db, 'model_turn', MINUTE))!;
    const outcome = await runDurableTurn(
      { db: t.db, js: js() },
      successor,
      async () => ({ action: 'complete' }),
      {
        ttlMs: MINUTE,
      },
    );
    expect(outcome.outcome).toBe('committed');
    await expect(staleJournal.append('entry', { note: 'late' })).rejects.toThrow(FencedError);
    await expect(staleJournal.model(() => ({ text: 'x' }))).rejects.toThrow(FencedError);
    await expect(staleJournal.commit({ action: 'complete' })).rejects.toThrow(FencedError);
  });

  it('a holder that committed but crashed before completing is finished by the next claimant, nothing re-run', async () => {
    const item = await claimedTurn();
    // The first holder commits and "crashes": the item is never completed.
    const journal = await Journal.open(js(), await taskForItem(js(), item));
    await journal.commit({ action: 'continue', output: { step: 1 }, state: new Uint8Array([1, 2, 3]) });
    await lapse(item);
    const successor = (await claim(t.db, 'model_turn', MINUTE))!;
    let ran = false;
    const outcome = await runDurableTurn(
      { db: t.db, js: js() },
      successor,
      async () => {
        ran = true;
        return { action: 'complete' };
      },
      { ttlMs: MINUTE },
    );
    expect(ran).toBe(false);
    expect(outcome).toMatchObject({
      outcome: 'recovered',
      commit: { action: 'continue', output: { step: 1 } },
    });
    expect((await readWork(t.db, item.id))!.state).toBe('stopped');
    expect((await read(js(), item.sessionId, 'model_turn')).filter((r) => r.type === 'commit')).toHaveLength(
      1,
    );
  });

  it('the next turn of the session journals as the next iteration, with the previous state', async () => {
    const item = await claimedTurn();
    const state = new TextEncoder().encode('{"turn":1}');
    await runDurableTurn({ db: t.db, js: js() }, item, async () => ({ action: 'continue', state }), {
      ttlMs: MINUTE,
    });
    await enqueue(t.db, { environmentId: item.environmentId, sessionId: item.sessionId, kind: 'model_turn' });
    const next = (await claim(t.db, 'model_turn', MINUTE))!;
    let seenState: Uint8Array | null = null;
    let iteration = -1;
    await runDurableTurn(
      { db: t.db, js: js() },
      next,
      async ({ journal, task }) => {
        seenState = journal.state();
        iteration = task.iteration;
        return { action: 'complete' };
      },
      { ttlMs: MINUTE },
    );
    expect(iteration).toBe(1);
    expect(seenState).toEqual(state);
    expect((await check(nc, item.sessionId)).ok()).toBe(true);
  });

  it('a lease lost mid-turn is reported and leaves the item to its new holder', async () => {
    const item = await claimedTurn();
    const outcome = await runDurableTurn(
      { db: t.db, js: js() },
      item,
      async () => {
        // Someone else takes the item while this handler runs.
        await lapse(item);
        await claim(t.db, 'model_turn', MINUTE);
        return { action: 'complete' };
      },
      { ttlMs: MINUTE },
    );
    expect(outcome.outcome).toBe('lease_lost');
    expect((await readWork(t.db, item.id))!.state).toBe('active');
  });
});
