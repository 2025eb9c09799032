/**
 * The brain as its own process (`functions/brain.ts` through scripts/launch.mjs, as `npm run brain` runs it)
 * beside a Node server that runs none (no LEASEHOLD_MODEL), on one PostgreSQL and one
 * nats-server: it answers the sessions' user messages on the scripted model, wakes on the turn
 * channel's NOTIFY, and on SIGTERM stops claiming, finishes the turn in hand and exits 0. It
 * refuses to start, naming the setting, without DATABASE_URL, NATS_URL or LEASEHOLD_MODEL.
 *
 * Process lifecycle is the subject here, so these tests wait on real processes (bounded).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IDLE_WAIT_MS } from '../../functions/brain-loop.js';
import { rows } from '../../src/db/handle.js';
import { BRAIN_ENTRY, type RunningBrain, startBrain } from '../helpers/brain.js';
import { openTestDb, type TestDb } from '../helpers/db.js';
import { freezeServer, type NatsServer, startNatsServer } from '../helpers/nats-server.js';
import { LAUNCH, type RunningServer, serverEnvironment, startServer } from '../helpers/server.js';

const usage = { input_tokens: 5, output_tokens: 3 };
const ANSWERS = [
  'First answer, from the brain process.',
  'Second answer.',
  'Third answer, finished while draining.',
];
const SCRIPT = ANSWERS.map((text) => ({ content: [{ type: 'text', text }], stop_reason: 'end_turn', usage }));
/** How long a refused start may take (a changed source is bundled first). */
const EXIT_TIMEOUT_MS = 30_000;

let t: TestDb;
let nats: NatsServer;
let server: RunningServer;
let dir: string;
let scriptFile: string;
const brains: RunningBrain[] = [];

beforeAll(async () => {
  t = await openTestDb('pg');
  nats = await startNatsServer();
  dir = await mkdtemp(path.join(tmpdir(), 'leasehold-brain-'));
  scriptFile = path.join(dir, 'script.json');
  await writeFile(scriptFile, JSON.stringify(SCRIPT));
  server = await startServer({ databaseUrl: t.url!, env: { NATS_URL: nats.wsUrl } });
}, 60_000);

afterAll(async () => {
  await Promise.all(brains.map((b) => b.stop()));
  await server?.stop();
  await nats?.stop();
  await t?.close();
  await rm(dir, { recursive: true, force: true });
});

const brainSettings = () => ({
  DATABASE_URL: t.url!,
  NATS_URL: nats.wsUrl,
  LEASEHOLD_MODEL: `scripted:${scriptFile}`,
  LEASEHOLD_BRAIN_SLOTS: '2',
});

async function brain(): Promise<RunningBrain> {
  const b = await startBrain(brainSettings());
  brains.push(b);
  return b;
}

const admin = () => new Anthropic({ apiKey: server.adminKey, baseURL: server.baseURL, maxRetries: 2 });

/** A session of a fresh agent (no tools) in a fresh self_hosted environment. */
async function newSession(): Promise<string> {
  const client = admin();
  const agent = await client.beta.agents.create({ name: 'brain process', model: 'claude-test' });
  const environment = await client.beta.environments.create({
    name: 'brain process',
    config: { type: 'self_hosted' },
  });
  const session = await client.beta.sessions.create({ agent: agent.id, environment_id: environment.id });
  return session.id;
}

async function say(sessionId: string, text: string): Promise<void> {
  await admin().beta.sessions.events.send(sessionId, {
    events: [{ type: 'user.message', content: [{ type: 'text', text }] }],
  });
}

type Event = { type: string; content?: Array<{ text?: string }>; stop_reason?: { type: string } | null };

async function eventsOf(sessionId: string): Promise<Event[]> {
  const out: Event[] = [];
  for await (const e of admin().beta.sessions.events.list(sessionId, { limit: 1000 })) out.push(e as Event);
  return out;
}

const agentTexts = (events: Event[]) =>
  events.filter((e) => e.type === 'agent.message').map((e) => e.content?.map((b) => b.text).join(''));
const endTurns = (events: Event[]) =>
  events.filter((e) => e.type === 'session.status_idle' && e.stop_reason?.type === 'end_turn').length;

async function until<T>(what: string, check: () => Promise<T | null | false>, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The session's newest model_turn item. */
async function lastTurnItem(sessionId: string) {
  const [item] = await rows<{ state: string; claims: number }>(
    t.db,
    sql`SELECT state, claims FROM work_items WHERE session_id = ${sessionId} AND kind = 'model_turn'
        ORDER BY created_at DESC, id DESC LIMIT 1`,
  );
  return item ?? null;
}

describe('npm run brain beside a server without LEASEHOLD_MODEL', () => {
  let b: RunningBrain;
  let sessionId: string;

  it('the server runs no brain; the brain process answers a session’s user message on the scripted model', async () => {
    b = await brain();
    expect(b.output()).toContain('brain: 2 turn slots');
    expect(server.output()).not.toContain('turn slots');
    sessionId = await newSession();
    await say(sessionId, 'Hello?');
    const events = await until('the first answer', async () => {
      const events = await eventsOf(sessionId);
      return endTurns(events) === 1 && events;
    });
    expect(events.map((e) => e.type)).toEqual([
      'user.message',
      'session.status_running',
      'agent.message',
      'session.status_idle',
    ]);
    expect(agentTexts(events)).toEqual([ANSWERS[0]]);
    expect(await lastTurnItem(sessionId)).toEqual({ state: 'stopped', claims: 1 });
  });

  it('a new turn wakes the idle brain at once over LISTEN, not at the end of its idle wait', async () => {
    // Every slot has just begun an idle wait of IDLE_WAIT_MS (the first turn woke them all).
    const sentAt = Date.now();
    await say(sessionId, 'And again?');
    await until('the second answer', async () => endTurns(await eventsOf(sessionId)) === 2);
    expect(Date.now() - sentAt).toBeLessThan(IDLE_WAIT_MS * 0.6);
    expect(agentTexts(await eventsOf(sessionId))).toEqual(ANSWERS.slice(0, 2));
  });

  it('SIGTERM with a turn in hand: it claims nothing more, finishes that turn, and exits 0', async () => {
    const other = await newSession();
    // With the journal frozen, a claimed turn cannot finish: it is in hand when the signal comes.
    await freezeServer(nats.pid);
    let frozen = true;
    try {
      await say(sessionId, 'One more?');
      await until('the third turn claimed', async () => ((await lastTurnItem(sessionId))?.claims ?? 0) >= 1);
      let exited = false;
      void b.exited.then(() => {
        exited = true;
      });
      // The brain's process only, as a process manager signals `npm run brain`.
      process.kill(b.pid, 'SIGTERM');
      await until('the drain to begin', async () => b.output().includes('SIGTERM: draining'));
      // Draining: a new session's turn is enqueued and notified, and no slot takes it.
      await say(other, 'Anyone there?');
      await new Promise((r) => setTimeout(r, 500));
      expect(exited).toBe(false);
      process.kill(nats.pid, 'SIGCONT');
      frozen = false;
    } finally {
      if (frozen) process.kill(nats.pid, 'SIGCONT');
    }
    expect(await b.exited).toBe(0);
    expect(b.output()).toContain('drained');
    expect(b.output()).not.toContain('brain turn failed');

    const events = await eventsOf(sessionId);
    expect(endTurns(events)).toBe(3);
    expect(agentTexts(events)).toEqual(ANSWERS);
    expect(await lastTurnItem(sessionId)).toEqual({ state: 'stopped', claims: 1 });
    expect(await lastTurnItem(other)).toEqual({ state: 'queued', claims: 0 });

    // The next brain takes it; the script counts that session's own model calls (none yet).
    await brain();
    await until('the other session answered', async () => endTurns(await eventsOf(other)) === 1);
    expect(agentTexts(await eventsOf(other))).toEqual([ANSWERS[0]]);
  });
});

describe('refusals', () => {
  /** Runs the brain with `settings` (and nothing else it reads) until it exits. */
  const runToExit = (settings: Record<string, string>) =>
    new Promise<{ code: number | null; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [LAUNCH, BRAIN_ENTRY],
        { env: { ...serverEnvironment(), ...settings }, timeout: EXIT_TIMEOUT_MS },
        (err, _stdout, stderr) =>
          resolve({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, stderr }),
      );
    });

  it.each([
    ['DATABASE_URL', /the embedded database cannot be shared between processes/],
    ['NATS_URL', /journal/],
    ['LEASEHOLD_MODEL', /anthropic, or scripted:/],
  ])('without %s it exits 1 with one line naming it', async (name, why) => {
    const settings: Record<string, string> = brainSettings();
    delete settings[name];
    const { code, stderr } = await runToExit(settings);
    expect(code).toBe(1);
    const lines = stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^\[leasehold\] configuration error: the brain needs /);
    expect(lines[0]).toContain(name);
    expect(lines[0]).toMatch(why);
  });

  it('a bad LEASEHOLD_BRAIN_SLOTS or a missing script file stops it with exit 1, naming the setting', async () => {
    const slots = await runToExit({ ...brainSettings(), LEASEHOLD_BRAIN_SLOTS: '0' });
    expect(slots.code).toBe(1);
    expect(slots.stderr).toContain('[leasehold] configuration error: LEASEHOLD_BRAIN_SLOTS');
    const script = await runToExit({ ...brainSettings(), LEASEHOLD_MODEL: `scripted:${dir}/missing.json` });
    expect(script.code).toBe(1);
    expect(script.stderr).toContain(`configuration error: LEASEHOLD_MODEL=scripted:${dir}/missing.json`);
  });
});
