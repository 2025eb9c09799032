import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureJournalStream, read } from '../../src/journal/index.js';
import { enqueue } from '../../src/queue/index.js';
import { openTestDb, type TestDb } from '../helpers/db.js';
import { readWork, setupSession } from '../helpers/factories.js';
import { useNatsServer } from '../helpers/nats.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const run = promisify(execFile);

describe('the example platform function (functions/example-turn.ts)', () => {
  const nats = useNatsServer();
  let t: TestDb;
  beforeAll(async () => {
    t = await openTestDb('pg');
    const nc = await nats.connect();
    await ensureJournalStream(await jetstreamManager(nc));
  });
  afterAll(async () => {
    await t?.close();
  });

  const example = async () => {
    const { stdout } = await run(path.join(ROOT, 'node_modules/.bin/tsx'), ['functions/example-turn.ts'], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: t.url!, NATS_URL: nats.wsUrl },
      timeout: 60_000,
    });
    return JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
  };

  it('claims a model_turn, runs it through the journal with a scripted model, and completes it', async () => {
    const s = await setupSession(t.db, 'cloud');
    const { work } = await enqueue(t.db, { ...s, kind: 'model_turn' });
    expect(await example()).toMatchObject({ item: work.id, outcome: 'committed', requests: 2 });
    expect((await readWork(t.db, work.id))!.state).toBe('stopped');
    const records = await read(jetstream(await nats.connect()), s.sessionId, 'model_turn');
    expect(records.map((r) => r.type)).toEqual([
      'claim',
      'model.response',
      'tool.intent',
      'tool.result',
      'model.response',
      'commit',
    ]);
    expect(await example()).toEqual({ outcome: 'idle' });
  });
});
