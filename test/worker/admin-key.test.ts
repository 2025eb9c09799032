/**
 * LEASEHOLD_ADMIN_KEY on the Worker, inside workerd: on a database no Node process has touched
 * the configured key manages the service; each isolate ensures it once (the statement is
 * counted), a failed ensure is tried again, a changed value retires the earlier key, and a
 * revoked configured key stays revoked until the next isolate.
 *
 * Each test configures a key of its own: the isolate remembers which value it ensured, so a
 * new value starts from "not ensured" whatever ran before.
 */
import { createExecutionContext, env, waitOnExecutionContext } from 'cloudflare:test';
import { Pool } from '@neondatabase/serverless';
import { sql } from 'drizzle-orm';
import { afterEach, describe, expect, it, type MockInstance, vi } from 'vitest';
import worker from '../../functions/worker.js';
import { maybeRow } from '../../src/db/handle.js';
import { bindings, withDb } from './db.js';

const ORIGIN = 'http://leasehold.test';

type Handler = typeof worker;

interface Send {
  /** The bearer presented; none when absent. */
  key?: string;
  /** LEASEHOLD_ADMIN_KEY as the Worker's binding. */
  adminKey: string;
  method?: string;
  body?: unknown;
  databaseUrl?: string;
  /** Another isolate's copy of the Worker; this file's by default. */
  handler?: Handler;
}

/** One request to the Worker with LEASEHOLD_ADMIN_KEY bound, as workerd would pass its env. */
async function send(path: string, options: Send): Promise<Response> {
  const headers: Record<string, string> = {};
  if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const ctx = createExecutionContext();
  const res = await (options.handler ?? worker).fetch(
    new Request(`${ORIGIN}${path}`, {
      method: options.method ?? 'GET',
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    }),
    {
      ...env,
      LEASEHOLD_ADMIN_KEY: options.adminKey,
      DATABASE_URL: options.databaseUrl ?? bindings.DATABASE_URL,
    },
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return res;
}

const freshKey = () => `lh_test_admin_${crypto.randomUUID().replaceAll('-', '')}`;

/** SHA-256 hex, computed here with Web Crypto rather than by the code under test. */
async function sha256Hex(secret: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(secret));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

interface KeyRow {
  id: string;
  name: string;
  scope: string;
  source: string;
  revoked: boolean;
  /** The row version's transaction id: it changes whenever the row is written again. */
  version: string;
}

const keyRow = async (secret: string) => {
  const digest = await sha256Hex(secret);
  return withDb((db) =>
    maybeRow<KeyRow>(
      db,
      sql`SELECT id, name, scope, source, revoked_at IS NOT NULL AS revoked, xmin::text AS version
            FROM api_keys WHERE key_hash = ${digest}`,
    ),
  );
};

/** Every statement a Neon Pool sends from now on, the Worker's and this file's alike. */
let statements: MockInstance | undefined;
function countStatements(): { all(): number; ensures(): number } {
  statements = vi.spyOn(Pool.prototype, 'query');
  const texts = () =>
    statements!.mock.calls.map(([q]) => (typeof q === 'string' ? q : (q as { text: string }).text));
  // The ensure is the one statement that inserts the configured admin key.
  return {
    all: () => texts().length,
    ensures: () => texts().filter((t) => t.includes("'configured admin key'")).length,
  };
}
afterEach(() => {
  statements?.mockRestore();
  statements = undefined;
});

async function expect401(res: Response): Promise<void> {
  const text = await res.text();
  expect(res.status, text).toBe(401);
  expect(JSON.parse(text)).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
}

describe('LEASEHOLD_ADMIN_KEY on the Worker', () => {
  it('on a fresh database, the configured key manages environments and a wrong key is 401', async () => {
    const adminKey = freshKey();
    // Nothing stored it beforehand: the database was only migrated, and no Node process ran on it.
    expect(await keyRow(adminKey)).toBeNull();

    const created = await send('/v1/environments', {
      key: adminKey,
      adminKey,
      method: 'POST',
      body: { name: 'made on the worker', config: { type: 'self_hosted' } },
    });
    const createdText = await created.text();
    expect(created.status, createdText).toBe(200);
    const environment = JSON.parse(createdText) as { id: string; name: string };
    expect(environment.name).toBe('made on the worker');

    const listed = await send('/v1/environments', { key: adminKey, adminKey });
    expect(listed.status).toBe(200);
    const ids = ((await listed.json()) as { data: { id: string }[] }).data.map((e) => e.id);
    expect(ids).toContain(environment.id);

    await expect401(await send('/v1/environments', { key: freshKey(), adminKey }));
    await expect401(await send('/v1/environments', { key: `${adminKey}x`, adminKey }));
    await expect401(await send('/v1/environments', { adminKey }));

    // Stored as Node stores it: hashed, an admin key whose source is the setting.
    expect(await keyRow(adminKey)).toMatchObject({
      name: 'configured admin key',
      scope: 'admin',
      source: 'config',
      revoked: false,
    });
  });

  it('the console signs in with the configured key as the first credential it resolves', async () => {
    const adminKey = freshKey();
    const ctx = createExecutionContext();
    const res = await worker.fetch(
      new Request(`${ORIGIN}/console/sign-in`, {
        method: 'POST',
        redirect: 'manual',
        headers: { origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ key: adminKey }).toString(),
      }),
      { ...env, LEASEHOLD_ADMIN_KEY: adminKey },
      ctx,
    );
    await waitOnExecutionContext(ctx);
    expect(res.status).toBe(303);
    expect(res.headers.get('set-cookie')).toMatch(/^leasehold_console=/);
  });

  it('ensures the key once per isolate: no later request runs a statement for it', async () => {
    const adminKey = freshKey();
    const count = countStatements();
    expect((await send('/v1/environments', { key: adminKey, adminKey })).status).toBe(200);
    expect(count.ensures(), 'the first request ensures the configured key').toBe(1);
    const ensured = await keyRow(adminKey);
    expect(ensured?.revoked).toBe(false);

    statements!.mockClear();
    const later = await Promise.all([
      send('/v1/environments', { key: adminKey, adminKey }),
      send('/v1/environments', { key: adminKey, adminKey, method: 'POST', body: { name: 'later' } }),
      send('/v1/api_keys', { key: adminKey, adminKey }),
      send('/v1/environments', { key: freshKey(), adminKey }),
      send('/v1/environments', { key: freshKey(), adminKey }),
    ]);
    expect(later.map((res) => res.status)).toEqual([200, 200, 200, 401, 401]);
    expect(count.all(), 'the later requests reached the database').toBeGreaterThanOrEqual(5);
    expect(count.ensures(), 'no later request ensures the key again').toBe(0);
    // The ensure rewrites the key's row whenever it runs; it was not rewritten.
    expect((await keyRow(adminKey))?.version).toBe(ensured?.version);
  });

  it('a failed ensure is not remembered: the next request tries again', async () => {
    const adminKey = freshKey();
    const unreachable = new URL(bindings.DATABASE_URL);
    unreachable.port = '1';
    const down = await send('/v1/environments', {
      key: adminKey,
      adminKey,
      databaseUrl: unreachable.toString(),
    });
    expect(down.status).toBe(503);
    expect(await keyRow(adminKey)).toBeNull();

    const count = countStatements();
    expect((await send('/v1/environments', { key: adminKey, adminKey })).status).toBe(200);
    expect(count.ensures()).toBe(1);
  });

  it('a changed value is ensured again and retires the earlier key, as a changed setting does on Node', async () => {
    const before = freshKey();
    const after = freshKey();
    expect((await send('/v1/api_keys', { key: before, adminKey: before })).status).toBe(200);
    const count = countStatements();
    expect((await send('/v1/api_keys', { key: after, adminKey: after })).status).toBe(200);
    expect(count.ensures()).toBe(1);
    expect(await keyRow(before)).toMatchObject({ source: 'config', revoked: true });
    expect(await keyRow(after)).toMatchObject({ source: 'config', revoked: false });
  });

  it('a configured key revoked through the API stays revoked in this isolate and is live again in the next', async () => {
    const adminKey = freshKey();
    expect((await send('/v1/api_keys', { key: adminKey, adminKey })).status).toBe(200);
    const { id } = (await keyRow(adminKey))!;
    const revoked = await send(`/v1/api_keys/${id}/revoke`, { key: adminKey, adminKey, method: 'POST' });
    expect(revoked.status).toBe(204);
    await expect401(await send('/v1/api_keys', { key: adminKey, adminKey }));
    expect(await keyRow(adminKey)).toMatchObject({ revoked: true });

    // A new isolate: a second copy of the Worker module, with its own app and memory.
    const specifier = '../../functions/worker.js?isolate=next';
    const next = ((await import(/* @vite-ignore */ specifier)) as { default: Handler }).default;
    expect(next).not.toBe(worker);
    expect((await send('/v1/api_keys', { key: adminKey, adminKey, handler: next })).status).toBe(200);
    expect(await keyRow(adminKey)).toMatchObject({ revoked: false });
  });

  it('during a gradual deployment, isolates still given the replaced value take nothing back: the new key works on every isolate, the old on none, and they warn once', async () => {
    const older = freshKey();
    const newer = freshKey();
    const isolate = async (name: string) =>
      ((await import(/* @vite-ignore */ `../../functions/worker.js?isolate=${name}`)) as { default: Handler })
        .default;
    const oldVersion = await isolate(`old-${older}`);
    const newVersion = await isolate(`new-${newer}`);
    expect((await send('/v1/api_keys', { key: older, adminKey: older, handler: oldVersion })).status).toBe(
      200,
    );
    expect((await send('/v1/api_keys', { key: newer, adminKey: newer, handler: newVersion })).status).toBe(
      200,
    );

    // The platform keeps starting isolates of the old version until the rollout ends.
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      const oldAgain = await isolate(`old-again-${older}`);
      await expect401(await send('/v1/api_keys', { key: older, adminKey: older, handler: oldAgain }));
      await expect401(await send('/v1/api_keys', { key: older, adminKey: older, handler: oldAgain }));
      expect(
        warn.mock.calls.filter(([m]) => String(m).includes('LEASEHOLD_ADMIN_KEY holds a value')),
      ).toHaveLength(1);
      const deployed = [
        [oldVersion, older],
        [oldAgain, older],
        [newVersion, newer],
      ] as const;
      for (const [handler, adminKey] of deployed) {
        expect((await send('/v1/api_keys', { key: newer, adminKey, handler })).status).toBe(200);
      }
    } finally {
      warn.mockRestore();
    }
    expect(await keyRow(older)).toMatchObject({ source: 'config', revoked: true });
    expect(await keyRow(newer)).toMatchObject({ source: 'config', revoked: false });
  });
});
