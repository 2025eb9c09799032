/**
 * The session loop as tests run it end to end: a database of the file's own, a private
 * nats-server for the journal, a fake Messages API that checks every request, and the real
 * Node server with its brain in process on that API. `close()` ends them all.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'vitest';
import { openTestDb, type TestDb } from './db.js';
import { MessagesServer } from './messages-server.js';
import { type NatsServer, startNatsServer } from './nats.js';
import { type RunningServer, startServer } from './server.js';

const MODEL_KEY = 'sk-test-model-key';

export interface LoopServer {
  testDb: TestDb;
  nats: NatsServer;
  messages: MessagesServer;
  server: RunningServer;
  /** A temporary directory for the workers' tools, removed by close(). */
  workdir: string;
  /** A new environment key of `environmentId`, issued through the API. */
  environmentKey(environmentId: string): Promise<string>;
  close(): Promise<void>;
}

export async function startLoopServer(options: {
  responses: readonly object[];
  tools: readonly string[];
}): Promise<LoopServer> {
  const testDb = await openTestDb('pg');
  const nats = await startNatsServer();
  const messages = await MessagesServer.start({
    responses: options.responses,
    apiKey: MODEL_KEY,
    tools: options.tools,
  });
  const workdir = await mkdtemp(path.join(tmpdir(), 'leasehold-loop-'));
  const server = await startServer({
    databaseUrl: testDb.url!,
    env: {
      NATS_URL: nats.wsUrl,
      LEASEHOLD_MODEL: 'anthropic',
      LEASEHOLD_MODEL_API_KEY: MODEL_KEY,
      LEASEHOLD_MODEL_BASE_URL: messages.url,
    },
  });
  return {
    testDb,
    nats,
    messages,
    server,
    workdir,
    async environmentKey(environmentId) {
      const res = await fetch(`${server.baseURL}/v1/environments/${environmentId}/keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${server.adminKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'worker' }),
      });
      expect(res.status).toBe(201);
      return ((await res.json()) as { key: string }).key;
    },
    async close() {
      await server.stop();
      await messages.close();
      await nats.stop();
      await testDb.close();
      await rm(workdir, { recursive: true, force: true });
    },
  };
}
