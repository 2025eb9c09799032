import { type JetStreamClient, jetstreamManager } from '@nats-io/jetstream';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { rows, type SqlHandle } from '../../src/db/handle.js';
import { runOnce } from '../../src/housekeeping/index.js';
import { connectJournal } from '../../src/journal/connect.js';
import { JournalTransportError } from '../../src/journal/errors.js';
import { Journal } from '../../src/journal/journal.js';
import { read } from '../../src/journal/read.js';
import { claimJournalPurges } from '../../src/sessions/claim-journal-purges.js';
import { forgetJournalPurge } from '../../src/sessions/forget-journal-purge.js';
import {
  deleteSession,
  JOURNAL_PURGE_GRACE_MS,
  JOURNAL_PURGE_HOLD_MS,
  type JournalProvider,
  purgeJournals,
} from '../../src/sessions/index.js';
import { useTestDb } from '../helpers/db.js';
import { connectJs, provisionJournal, taskOf } from '../helpers/journal.js';
import { useNatsServer } from '../helpers/nats.js';
import { apiSession } from '../helpers/sessions.js';

const STEP = 'model_turn';

/** Moves every queued purge (and its hold, if any) `ms` into the past. */
async function agePurges(db: SqlHandle, ms: number): Promise<void> {
  await db.execute(
    sql`UPDATE journal_purges
           SET requested_at = requested_at - ${ms}::double precision * interval '1 millisecond',
               claimed_until = claimed_until - ${ms}::double precision * interval '1 millisecond'`,
  );
}

async function queued(db: SqlHandle): Promise<string[]> {
  return (await rows<{ id: string }>(db, sql`SELECT run_id AS id FROM journal_purges ORDER BY run_id`)).map(
    (r) => r.id,
  );
}

/** An API session whose brain has written to its journal. */
async function sessionWithJournal(
  db: SqlHandle,
  js: JetStreamClient,
  environmentId?: string,
): Promise<string> {
  const { sessionId } = await apiSession(db, environmentId ? { environmentId } : {});
  const journal = await Journal.open(js, taskOf(sessionId, { stepId: STEP }));
  await journal.append('entry', { turn: 0 });
  return sessionId;
}

async function journalOf(js: JetStreamClient, sessionId: string): Promise<string[]> {
  return (await read(js, sessionId, STEP)).map((r) => r.type);
}

describe('journal purges of deleted sessions', () => {
  const t = useTestDb('pg', { poolSize: 20 });
  const nats = useNatsServer();

  async function setup() {
    await provisionJournal(nats);
    const { js, nc } = await connectJs(nats);
    let asked = 0;
    const journal: JournalProvider = () => {
      asked++;
      return jetstreamManager(nc);
    };
    return { js, journal, asked: () => asked };
  }

  it("a deleted session's run is purged once the grace has passed, and only its run; a live session's journal is never touched", async () => {
    const { js, journal } = await setup();
    const due = await sessionWithJournal(t.db, js);
    const recent = await sessionWithJournal(t.db, js);
    const live = await sessionWithJournal(t.db, js);
    await deleteSession(t.db, due);
    await agePurges(t.db, JOURNAL_PURGE_GRACE_MS + 60_000);
    await deleteSession(t.db, recent);

    expect(await runOnce({ db: t.db, journal })).toMatchObject({ purgedJournals: 1 });
    expect(await journalOf(js, due)).toEqual([]);
    expect(await journalOf(js, recent)).toEqual(['claim', 'entry']);
    expect(await journalOf(js, live)).toEqual(['claim', 'entry']);
    expect(await queued(t.db)).toEqual([recent]);

    await agePurges(t.db, JOURNAL_PURGE_GRACE_MS);
    expect(await runOnce({ db: t.db, journal })).toMatchObject({ purgedJournals: 1 });
    expect(await journalOf(js, recent)).toEqual([]);
    expect(await journalOf(js, live)).toEqual(['claim', 'entry']);
    expect(await queued(t.db)).toEqual([]);
  });

  it('NATS is asked for only when a purge is due; without a journal the purges wait', async () => {
    const { js, journal, asked } = await setup();
    await runOnce({ db: t.db, journal });
    expect(asked()).toBe(0);

    const sessionId = await sessionWithJournal(t.db, js);
    await deleteSession(t.db, sessionId);
    await agePurges(t.db, JOURNAL_PURGE_GRACE_MS + 60_000);
    expect(await runOnce({ db: t.db })).toMatchObject({ purgedJournals: 0 });
    expect(await queued(t.db)).toEqual([sessionId]);
    expect(await runOnce({ db: t.db, journal })).toMatchObject({ purgedJournals: 1 });
    expect(asked()).toBe(1);
  });

  it('a purge another run holds is passed over until its hold lapses; the lapsed holder then forgets nothing', async () => {
    const { js, journal } = await setup();
    const sessionId = await sessionWithJournal(t.db, js);
    await deleteSession(t.db, sessionId);
    await agePurges(t.db, JOURNAL_PURGE_GRACE_MS + 60_000);
    // A run that took it and died (or is still at it).
    const [stale] = await claimJournalPurges(t.db, JOURNAL_PURGE_GRACE_MS, JOURNAL_PURGE_HOLD_MS, 10);
    expect(stale?.runId).toBe(sessionId);

    expect(await purgeJournals(t.db, journal)).toBe(0);
    expect(await journalOf(js, sessionId)).toEqual(['claim', 'entry']);
    await agePurges(t.db, JOURNAL_PURGE_HOLD_MS + 1_000);
    expect(await purgeJournals(t.db, journal)).toBe(1);
    expect(await journalOf(js, sessionId)).toEqual([]);
    expect(await forgetJournalPurge(t.db, stale!)).toBe(false);
  });

  it('a run whose id names a session again is not purged', async () => {
    const { js, journal } = await setup();
    const sessionId = await sessionWithJournal(t.db, js);
    const environmentId = (
      await rows<{ e: string }>(t.db, sql`SELECT environment_id AS e FROM sessions WHERE id = ${sessionId}`)
    )[0]!.e;
    await deleteSession(t.db, sessionId);
    await agePurges(t.db, JOURNAL_PURGE_GRACE_MS + 60_000);
    // The platform lane opens sessions under ids of its own choosing.
    await t.db.execute(
      sql`INSERT INTO sessions (id, environment_id) VALUES (${sessionId}, ${environmentId})`,
    );

    expect(await purgeJournals(t.db, journal)).toBe(0);
    expect(await journalOf(js, sessionId)).toEqual(['claim', 'entry']);
    expect(await queued(t.db)).toEqual([sessionId]);
  });

  it('NATS out of reach fails the run after every database step is done, and the purge is retried by a later run', async () => {
    const { js, journal } = await setup();
    const sessionId = await sessionWithJournal(t.db, js);
    await deleteSession(t.db, sessionId);
    await agePurges(t.db, JOURNAL_PURGE_GRACE_MS + 60_000);
    const { sessionId: other, environmentId } = await apiSession(t.db);
    await t.db.execute(
      sql`INSERT INTO work_items (id, environment_id, session_id, kind, lane, state, stopped_at)
          VALUES ('work_old', ${environmentId}, ${other}, 'model_turn', 'claim', 'stopped', now() - interval '30 days')`,
    );
    const unreachable: JournalProvider = async () =>
      jetstreamManager(await connectJournal('ws://127.0.0.1:1', { webSocket: WebSocket, reconnect: false }));

    await expect(runOnce({ db: t.db, journal: unreachable })).rejects.toThrow(JournalTransportError);
    // The stopped item went before the journal step was reached.
    expect(await rows(t.db, sql`SELECT id FROM work_items WHERE id = 'work_old'`)).toEqual([]);
    expect(await queued(t.db)).toEqual([sessionId]);
    await agePurges(t.db, JOURNAL_PURGE_HOLD_MS + 1_000);
    expect(await purgeJournals(t.db, journal)).toBe(1);
    expect(await journalOf(js, sessionId)).toEqual([]);
  });

  it('overlapping runs purge every due run once: their counts add up to the runs purged', async () => {
    const { js, journal } = await setup();
    const { environmentId } = await apiSession(t.db);
    const due: string[] = [];
    for (let i = 0; i < 24; i++) due.push(await sessionWithJournal(t.db, js, environmentId));
    for (const id of due) await deleteSession(t.db, id);
    await agePurges(t.db, JOURNAL_PURGE_GRACE_MS + 60_000);

    const counts = await Promise.all(
      Array.from({ length: 4 }, () => purgeJournals(t.db, journal, { batch: 3, maxBatches: 100 })),
    );
    expect(counts.reduce((a, b) => a + b, 0)).toBe(24);
    expect(await queued(t.db)).toEqual([]);
    for (const id of due) expect(await journalOf(js, id)).toEqual([]);
  });
});
