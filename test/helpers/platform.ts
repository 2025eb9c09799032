/**
 * Platform-lane fixtures: a platform API key, an environment with a session, and calls that
 * speak the lane's JSON, so a test spells out only the request that matters.
 */
import { expect } from 'vitest';
import type { Database } from '../../src/db/handle.js';
import type { WorkKind } from '../../src/queue/types.js';
import { apiKey, environmentWithKey, type TestEnvironment, testApi } from './api.js';
import type { EnvironmentKind } from './factories.js';

export const PLATFORM = '/v1/platform';

/** What the claim endpoint answers, as the wire has it. */
export interface WireItem {
  id: string;
  environment_id: string;
  session_id: string;
  kind: WorkKind;
  lease: string;
  reclaimed: boolean;
  claims: number;
  metadata: Record<string, string>;
  trace_context: Record<string, string> | null;
}

export interface PlatformBundle {
  /** A platform-scope API key. */
  key: string;
  /** An environment (cloud unless asked) with one session and an environment key. */
  env: TestEnvironment;
  /** POST a JSON body to a platform path with the platform key. */
  post(path: string, body?: unknown, headers?: Record<string, string>): Promise<Response>;
  /** Enqueues over HTTP for the bundle's session (or the given one) and returns the work id. */
  enqueue(kind: WorkKind, sessionId?: string): Promise<string>;
  /** Claims over HTTP; null on an empty lane. */
  claim(kind: WorkKind, ttlSeconds?: number): Promise<WireItem | null>;
}

export async function platformSetup(
  db: Database,
  kind: EnvironmentKind = 'cloud',
): Promise<{ api: ReturnType<typeof testApi> } & PlatformBundle> {
  const api = testApi(db);
  const key = await apiKey(db, 'platform');
  const env = await environmentWithKey(db, kind);
  const post = (path: string, body?: unknown, headers?: Record<string, string>) =>
    api.call('POST', `${PLATFORM}${path}`, { key, body, headers });
  return {
    api,
    key,
    env,
    post,
    enqueue: async (workKind, sessionId = env.sessionId) => {
      const res = await post('/work', {
        environment_id: env.environmentId,
        session_id: sessionId,
        kind: workKind,
      });
      expect(res.status).toBe(201);
      return ((await res.json()) as { work: { id: string } }).work.id;
    },
    claim: async (workKind, ttlSeconds = 60) => {
      const res = await post('/work/claim', { kind: workKind, ttl_seconds: ttlSeconds });
      expect(res.status).toBe(200);
      return (await res.json()) as WireItem | null;
    },
  };
}

/** The error envelope's `error.type`, asserting the status on the way. */
export async function errorType(res: Response, status: number): Promise<string> {
  expect(res.status).toBe(status);
  const body = (await res.json()) as { type: string; error: { type: string } };
  expect(body.type).toBe('error');
  return body.error.type;
}
