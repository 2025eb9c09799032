/**
 * The secret-hygiene run against the real server: keys issued, used on every lane, mistyped,
 * put in the query string, revoked and tried again — and the database dumped table by table.
 */
import { sql } from 'drizzle-orm';
import { expect } from 'vitest';
import { rows, type SqlHandle } from '../../../src/db/handle.js';

export async function exerciseKeys(
  baseURL: string,
  adminKey: string,
): Promise<{ secrets: string[]; requests: number }> {
  let requests = 0;
  const call = async (
    method: string,
    path: string,
    auth: Record<string, string>,
    body?: unknown,
  ): Promise<{ status: number; json: Record<string, unknown> | null }> => {
    requests++;
    const res = await fetch(`${baseURL}${path}`, {
      method,
      headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, json: text ? (JSON.parse(text) as Record<string, unknown>) : null };
  };
  const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
  const expectStatus = async (status: number, p: ReturnType<typeof call>) => {
    const res = await p;
    expect(res.status, JSON.stringify(res.json)).toBe(status);
    return res.json as Record<string, string> & { work?: { id: string } };
  };
  const admin = bearer(adminKey);

  const env = await expectStatus(
    200,
    call('POST', '/v1/environments', admin, { name: 'hygiene', config: { type: 'self_hosted' } }),
  );
  const base = `/v1/environments/${env.id}`;
  const envKey = await expectStatus(201, call('POST', `${base}/keys`, admin, { name: 'w1' }));
  const expiring = await expectStatus(
    201,
    call('POST', `${base}/keys`, admin, { name: 'w2', expires_in_seconds: 60 }),
  );
  const platform = await expectStatus(
    201,
    call('POST', '/v1/api_keys', admin, { name: 'p', scope: 'platform' }),
  );
  const second = await expectStatus(201, call('POST', '/v1/api_keys', admin, { name: 'a', scope: 'admin' }));
  const worker = bearer(envKey.key!);

  // Every lane, every key.
  await expectStatus(200, call('GET', `${base}/work/poll`, bearer(expiring.key!)));
  const enqueued = await expectStatus(
    201,
    call('POST', '/v1/platform/work', bearer(platform.key!), {
      environment_id: env.id,
      session_id: 'hygiene_session',
      kind: 'tool_exec',
      metadata: { purpose: 'hygiene' },
    }),
  );
  const polled = await expectStatus(200, call('GET', `${base}/work/poll?block_ms=50`, worker));
  expect(polled.id).toBe(enqueued.work!.id);
  await expectStatus(200, call('POST', `${base}/work/${polled.id}/ack`, worker));
  await expectStatus(
    200,
    call('POST', `${base}/work/${polled.id}/heartbeat?expected_last_heartbeat=NO_HEARTBEAT`, worker),
  );
  await expectStatus(200, call('POST', `${base}/work/${polled.id}/stop`, worker, { force: true }));
  await expectStatus(200, call('GET', `${base}/work`, worker));
  await expectStatus(200, call('GET', `${base}/work/stats`, { 'x-api-key': platform.key! }));
  await expectStatus(
    201,
    call('POST', '/v1/platform/work', bearer(platform.key!), {
      environment_id: env.id,
      session_id: 'hygiene_session',
      kind: 'model_turn',
    }),
  );
  const claimed = await expectStatus(
    200,
    call('POST', '/v1/platform/work/claim', bearer(second.key!), { kind: 'model_turn', ttl_seconds: 30 }),
  );
  await expectStatus(
    204,
    call('POST', `/v1/platform/work/${claimed.id}/complete`, bearer(platform.key!), { lease: claimed.lease }),
  );
  await expectStatus(200, call('GET', '/v1/api_keys', { 'x-api-key': second.key! }));
  await expectStatus(200, call('GET', `${base}/keys`, bearer(second.key!)));

  // Mistyped, misplaced and malformed: each a refusal the server might be tempted to log.
  const mistyped = (key: string) => `${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}`;
  await expectStatus(401, call('GET', `${base}/work/poll`, bearer(mistyped(envKey.key!))));
  await expectStatus(401, call('GET', '/v1/api_keys', bearer(mistyped(adminKey))));
  await expectStatus(401, call('GET', `${base}/work/poll?api_key=${envKey.key}&key=${envKey.key}`, {}));
  await expectStatus(401, call('GET', '/v1/api_keys', bearer(envKey.key!)));
  await expectStatus(401, call('GET', `${base}/work/poll`, bearer(platform.key!)));
  await expectStatus(400, call('POST', '/v1/platform/work', bearer(platform.key!), '{"environment_id":'));

  // Revoked, then tried again.
  await expectStatus(204, call('POST', `${base}/keys/${envKey.id}/revoke`, admin));
  await expectStatus(204, call('POST', `/v1/api_keys/${platform.id}/revoke`, admin));
  await expectStatus(401, call('GET', `${base}/work/poll`, worker));
  await expectStatus(
    401,
    call('POST', '/v1/platform/work/claim', bearer(platform.key!), { kind: 'web_exec', ttl_seconds: 1 }),
  );
  await expectStatus(204, call('POST', `/v1/api_keys/${second.id}/revoke`, bearer(second.key!)));
  await expectStatus(401, call('GET', '/v1/api_keys', bearer(second.key!)));

  return { secrets: [envKey.key!, expiring.key!, platform.key!, second.key!], requests };
}

/** Every row of every table outside the system catalogs, as text. */
export async function tableDump(db: SqlHandle): Promise<{ text: string; tables: number; rows: number }> {
  const tables = await rows<{ schema: string; name: string }>(
    db,
    sql`SELECT table_schema AS schema, table_name AS name FROM information_schema.tables
         WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')`,
  );
  const parts: string[] = [];
  for (const t of tables) {
    const ident = `"${t.schema.replaceAll('"', '""')}"."${t.name.replaceAll('"', '""')}"`;
    const dumped = await rows<{ row: string }>(db, sql`SELECT t::text AS row FROM ${sql.raw(ident)} t`);
    parts.push(...dumped.map((d) => `${ident} ${d.row}`));
  }
  return { text: parts.join('\n'), tables: tables.length, rows: parts.length };
}
