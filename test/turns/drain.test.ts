/**
 * The bounded brain (the brain Worker's drain): turns one after another until the lane is
 * empty or the budget is spent; the journal asked for once, only when a turn is in hand; a
 * journal that cannot be opened leaves the claimed item to its lease and ends the drain.
 */
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Clock } from '../../src/clock.js';
import { ensureJournalStream, JournalUnavailableError } from '../../src/journal/index.js';
import { postEvents } from '../../src/loop/index.js';
import { drainTurns } from '../../src/turns/drain.js';
import type { ModelResponse } from '../../src/turns/model.js';
import { ScriptedModel } from '../../src/turns/scripted-model.js';
import { useTestDb } from '../helpers/db.js';
import { useNatsServer } from '../helpers/nats.js';
import { apiSession, eventsOf, workOf } from '../helpers/sessions.js';

const API = { kind: 'api' } as const;
const say = (text: string): ModelResponse => ({
  content: [{ type: 'text', text }],
  stop_reason: 'end_turn',
  usage: { input_tokens: 3, output_tokens: 2 },
});
const message = (text: string) => ({ type: 'user.message', content: [{ type: 'text', text }] });

describe('drainTurns: a brain started per event', () => {
  const t = useTestDb('pg');
  const nats = useNatsServer();
  let nc: NatsConnection;
  beforeAll(async () => {
    nc = await nats.connect();
    await ensureJournalStream(await jetstreamManager(nc));
  });

  async function queuedTurn(): Promise<string> {
    const { sessionId } = await apiSession(t.db);
    await postEvents(t.db, sessionId, [message('hello')], API);
    return sessionId;
  }

  it('runs every queued turn, one after another, and stops when the lane is empty', async () => {
    const sessions = [await queuedTurn(), await queuedTurn()];
    let asked = 0;
    const result = await drainTurns(
      {
        db: t.db,
        journal: async () => {
          asked++;
          return jetstream(nc);
        },
        model: new ScriptedModel([say('hi')]),
      },
      { budgetMs: 60_000 },
    );
    expect(result).toEqual({ turns: 2, ended: 'empty' });
    expect(asked).toBe(1);
    for (const id of sessions) {
      expect((await eventsOf(t.db, id)).map((e) => e.type)).toEqual([
        'user.message',
        'session.status_running',
        'agent.message',
        'session.status_idle',
      ]);
      expect((await workOf(t.db, id)).map((w) => w.state)).toEqual(['stopped']);
    }
  });

  it('an empty lane never asks for the journal', async () => {
    const result = await drainTurns(
      {
        db: t.db,
        journal: () => Promise.reject(new Error('not asked for')),
        model: new ScriptedModel([]),
      },
      { budgetMs: 60_000 },
    );
    expect(result).toEqual({ turns: 0, ended: 'empty' });
  });

  it('claims no turn once the budget is spent; the turn in hand is finished', async () => {
    const first = await queuedTurn();
    const second = await queuedTurn();
    // Time moves 10 s at every look: the budget is spent after the first turn.
    let now = 0;
    const clock: Clock = {
      now: () => (now += 10_000),
      setTimeout: (fn, ms) => setTimeout(fn, ms),
      clearTimeout: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
    };
    const result = await drainTurns(
      { db: t.db, journal: async () => jetstream(nc), model: new ScriptedModel([say('hi')]), clock },
      { budgetMs: 15_000 },
    );
    expect(result).toEqual({ turns: 1, ended: 'budget' });
    expect((await workOf(t.db, first)).map((w) => w.state)).toEqual(['stopped']);
    expect((await workOf(t.db, second)).map((w) => w.state)).toEqual(['queued']);
  });

  it('a journal that cannot be opened ends the drain and leaves the claimed turn to its lease', async () => {
    const sessionId = await queuedTurn();
    const other = await queuedTurn();
    const result = await drainTurns(
      {
        db: t.db,
        journal: () => Promise.reject(new JournalUnavailableError('NATS is down')),
        model: new ScriptedModel([say('hi')]),
      },
      { budgetMs: 60_000 },
    );
    expect(result).toEqual({ turns: 1, ended: 'journal_unavailable' });
    // Claimed and held (the lease spaces the retries); the next one was not touched.
    expect((await workOf(t.db, sessionId)).map((w) => w.state)).toEqual(['active']);
    expect((await workOf(t.db, other)).map((w) => w.state)).toEqual(['queued']);
    expect((await eventsOf(t.db, sessionId)).map((e) => e.type)).toEqual(['user.message']);
  });
});
