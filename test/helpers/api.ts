/**
 * In-process API fixtures: the Hono app over a test database, and credentials minted
 * through the same functions the management API uses.
 */
import type { Hono } from 'hono';
import { loadStaticFiles } from '../../functions/static-files.js';
import { createApp } from '../../src/api/app.js';
import type { StaticFiles } from '../../src/api/static-files.js';
import type { AppEnv, JournalDeps } from '../../src/api/types.js';
import { WakeHub } from '../../src/api/wake.js';
import { type ApiKeyScope, issueApiKey, issueEnvironmentKey } from '../../src/auth/credentials.js';
import { registerConsole } from '../../src/console/index.js';
import type { Database } from '../../src/db/handle.js';
import { createEnvironment, createSession, type EnvironmentKind } from './factories.js';

let staticFiles: StaticFiles | undefined;
/** assets/, read once per test file: what the Node server serves beside the app. */
export function testStaticFiles(): StaticFiles {
  staticFiles ??= loadStaticFiles();
  return staticFiles;
}

export interface TestApi {
  app: Hono<AppEnv>;
  hub: WakeHub;
  /** `app.request` with a credential and optional JSON body. */
  call(
    method: string,
    path: string,
    options?: { key?: string | null; body?: unknown; headers?: Record<string, string> },
  ): Promise<Response>;
}

/** `journal` wires the journal routes to a NATS server; without it they answer 503. */
export function testApi(db: Database, journal?: JournalDeps): TestApi {
  const hub = new WakeHub();
  const app = createApp(
    {
      db,
      wake: hub,
      log: { warn: () => {}, error: () => {} },
      journal: journal ? () => Promise.resolve(journal) : undefined,
    },
    { staticFiles: testStaticFiles(), console: registerConsole },
  );
  return {
    app,
    hub,
    call: (method, path, options = {}) => {
      const headers: Record<string, string> = { ...(options.headers ?? {}) };
      if (options.key) headers.authorization = `Bearer ${options.key}`;
      let body: string | undefined;
      if (options.body !== undefined) {
        body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
        headers['content-type'] ??= 'application/json';
      }
      return Promise.resolve(app.request(path, { method, headers, body }));
    },
  };
}

export interface TestEnvironment {
  environmentId: string;
  sessionId: string;
  /** A live environment key for this environment. */
  key: string;
  keyId: string;
}

/** An environment of `kind` with one session and one live environment key. */
export async function environmentWithKey(
  db: Database,
  kind: EnvironmentKind = 'self_hosted',
): Promise<TestEnvironment> {
  const environmentId = await createEnvironment(db, kind);
  const sessionId = await createSession(db, environmentId);
  const issued = await issueEnvironmentKey(db, environmentId, 'test key', null);
  return { environmentId, sessionId, key: issued.key, keyId: issued.id };
}

export async function apiKey(db: Database, scope: ApiKeyScope = 'admin'): Promise<string> {
  return (await issueApiKey(db, `test ${scope} key`, scope, null)).key;
}
