/**
 * The session loop's crashes with real processes: the Node server with its brain in process
 * (the model a local fake that checks every request), a private nats-server, and the SDK's
 * unmodified `EnvironmentWorker` as a child process. A worker is SIGKILLed in the middle of a
 * tool call; its lease is made to lapse by backdating (the wait is not the subject here); a
 * second worker is offered the item again, runs the call again, and its one answer moves the
 * session on.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rows } from '../../src/db/handle.js';
import { openCalls } from '../../src/sessions/index.js';
import type { TestDb } from '../helpers/db.js';
import { recordFault } from '../helpers/faults.js';
import { type LoopServer, startLoopServer } from '../helpers/loop-server.js';
import type { MessagesServer } from '../helpers/messages-server.js';
import { type RunningServer, serverEnvironment } from '../helpers/server.js';
import { eventsOf, workOf } from '../helpers/sessions.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const WORKER = path.join(import.meta.dirname, 'workers/session-worker.ts');
/** The tool: the first run leaves a mark and hangs (the worker dies in it); a rerun answers. */
const COMMAND = 'if [ -e ran-once ]; then echo second run; else touch ran-once; sleep 120; fi';
const usage = { input_tokens: 5, output_tokens: 5 };
const RESPONSES = [
  {
    content: [{ type: 'tool_use', id: 'toolu_crash', name: 'bash', input: { command: COMMAND } }],
    stop_reason: 'tool_use',
    usage,
  },
  { content: [{ type: 'text', text: 'It answered on the second run.' }], stop_reason: 'end_turn', usage },
];
const STEP_MS = 30_000;

let testDb: TestDb;
let loop: LoopServer;
let messages: MessagesServer;
let server: RunningServer;
let workdir: string;
const children = new Set<ChildProcess>();

beforeAll(async () => {
  loop = await startLoopServer({
    responses: RESPONSES,
    tools: ['bash', 'read', 'write', 'edit', 'glob', 'grep'],
  });
  ({ testDb, messages, server, workdir } = loop);
}, 120_000);

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await loop?.close();
});

function startWorker(environmentId: string, key: string): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER], {
    cwd: ROOT,
    env: {
      ...serverEnvironment(),
      LEASEHOLD_URL: server.baseURL,
      LEASEHOLD_ENVIRONMENT_ID: environmentId,
      LEASEHOLD_ENVIRONMENT_KEY: key,
      LEASEHOLD_WORKDIR: workdir,
      LEASEHOLD_MAX_IDLE_MS: '1000',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.add(child);
  child.on('exit', () => children.delete(child));
  return child;
}

async function until<T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  const deadline = Date.now() + STEP_MS;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('the session loop under crashes', () => {
  it('a worker SIGKILLed mid-tool: the item is offered again, the call runs again, one result is accepted and the turn ends', async (ctx) => {
    const admin = new Anthropic({ apiKey: server.adminKey, baseURL: server.baseURL });
    const agent = await admin.beta.agents.create({
      name: 'crash',
      model: 'claude-test',
      tools: [{ type: 'agent_toolset_20260401' }],
    });
    const environment = await admin.beta.environments.create({
      name: 'crash',
      config: { type: 'self_hosted' },
    });
    const key = await loop.environmentKey(environment.id);
    const session = await admin.beta.sessions.create({
      agent: agent.id,
      environment_id: environment.id,
      initial_events: [{ type: 'user.message', content: [{ type: 'text', text: 'run it' }] }],
    });

    const first = startWorker(environment.id, key);
    await until(
      'the first worker to be inside the tool',
      async () => existsSync(path.join(workdir, 'ran-once')),
      Boolean,
    );
    const exited = new Promise((r) => first.once('exit', r));
    first.kill('SIGKILL');
    await exited;
    const [held] = (await workOf(testDb.db, session.id)).filter((w) => w.kind === 'tool_exec');
    expect(held).toMatchObject({ state: 'active' });
    // Its heartbeat lease lapses (moved, not waited for).
    await testDb.db.execute(
      sql`UPDATE work_items SET lease_expires_at = now() - interval '1 second' WHERE id = ${held!.id}`,
    );

    const second = startWorker(environment.id, key);
    const log = await until(
      'the turn after the rerun to end',
      () => eventsOf(testDb.db, session.id),
      (l) =>
        l.some(
          (e) =>
            e.type === 'session.status_idle' && (e.body.stop_reason as { type: string }).type === 'end_turn',
        ),
    );
    const results = log.filter((e) => e.type === 'user.tool_result');
    expect(results).toHaveLength(1);
    expect(results[0]!.body).toMatchObject({
      is_error: false,
      content: [{ type: 'text', text: 'second run' }],
    });
    expect(log.filter((e) => e.type === 'agent.tool_use')).toHaveLength(1);
    expect(messages.violations).toEqual([]);
    expect(messages.served).toBe(2);
    expect(await openCalls(testDb.db, session.id)).toEqual([]);
    const rearms = await rows<{ rearms: number }>(
      testDb.db,
      sql`SELECT rearms FROM session_tool_calls WHERE session_id = ${session.id}`,
    );
    expect(rearms).toEqual([{ rearms: 1 }]);
    // The second worker idles out after end_turn and force-stops what it holds.
    await until(
      'every work item of the session to be stopped',
      () => workOf(testDb.db, session.id),
      (items) => items.every((w) => w.state === 'stopped'),
    );
    second.kill('SIGTERM');
    recordFault(ctx, {
      load: '1 session, 2 SDK EnvironmentWorker processes, the brain in the server',
      faults: 'the first worker SIGKILLed inside a bash call; its heartbeat lease lapsed by backdating',
      result: `re-offered and rerun; ${results.length} result accepted; ${messages.served} model calls; call re-armed ${rearms[0]!.rearms}×`,
    });
  }, 90_000);
});
