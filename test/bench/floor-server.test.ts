/**
 * The HTTP floor (bench/anchors/floor-server.ts) types the queue's statements by hand, so it
 * can drift from what the work API does: the ratio `wire_cycle_vs_floor` means something only
 * while both do the same work, and so does the platform lane's. One item through the wire
 * cycle and two through the platform loop on each, from the same start, must give the same
 * answers and leave the same rows.
 */
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createWireEnvironment,
  ensureSessions,
  type FloorServer,
  sdkHeaders,
  seedBacklog,
  startFloor,
  type WireEnvironment,
} from '../../bench/anchors/wire-cycle.js';
import { seedClaimBacklog } from '../../bench/lib/db.js';
import { rows } from '../../src/db/handle.js';
import { openTestDb, type TestDb } from '../helpers/db.js';
import { type RunningServer, startServer } from '../helpers/server.js';

/** A value that differs by run (ids, stamps) as the kind of value it is. */
function shape(value: unknown, key = ''): unknown {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'string' && (key === 'id' || key.endsWith('_id'))) return '<id>';
    if (typeof value === 'string' && key === 'lease') return '<proof>';
    if (typeof value === 'string' && /^\d{4}-\d{2}-\d{2}T/.test(value)) return '<time>';
    return value;
  }
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shape(v, k)]));
}

describe('the HTTP floor', () => {
  let t: TestDb;
  let leasehold: RunningServer;
  let floor: FloorServer;
  let environment: WireEnvironment;
  let seeding: pg.Pool;
  beforeAll(async () => {
    t = await openTestDb('pg');
    [leasehold, floor] = await Promise.all([startServer({ databaseUrl: t.url! }), startFloor(t.url!)]);
    environment = await createWireEnvironment(leasehold.baseURL, leasehold.adminKey);
    seeding = new pg.Pool({ connectionString: t.url!, max: 1 });
    await ensureSessions(seeding, environment.environmentId, 1);
  }, 60_000);
  afterAll(async () => {
    await seeding?.end();
    await Promise.all([leasehold?.stop(), floor?.stop()]);
    await t?.close();
  });

  /** One item through poll → ack → heartbeat → stop{force}: each answer and the item's row after it. */
  async function cycle(baseURL: string) {
    await seedBacklog(seeding, environment.environmentId, 1);
    const headers = { ...sdkHeaders(environment.key), 'anthropic-worker-id': 'floor-check' };
    const trace: unknown[] = [];
    const row = async () =>
      rows(
        t.db,
        sql`SELECT state, lane, acknowledged_at IS NOT NULL AS acknowledged, started_at IS NOT NULL AS started,
                   last_heartbeat IS NOT NULL AS beat, stop_requested_at IS NOT NULL AS stop_requested,
                   stopped_at IS NOT NULL AS stopped, lease_expires_at IS NOT NULL AS leased,
                   extract(epoch FROM lease_expires_at - updated_at) AS lease_s
              FROM work_items`,
      ).then(async (items) => ({
        items,
        workerPolls: await rows(t.db, sql`SELECT worker_id FROM worker_polls`),
      }));
    const step = async (method: string, path: string, body?: string) => {
      const res = await fetch(`${baseURL}/v1/environments/${environment.environmentId}/work${path}`, {
        method,
        headers: body ? { ...headers, 'content-type': 'application/json' } : headers,
        body,
      });
      const answer = await res.json();
      trace.push({
        path: path.replace(/work_\w+/, '<id>'),
        status: res.status,
        answer: shape(answer),
        row: await row(),
      });
      return answer as { id: string };
    };
    const work = await step('GET', '/poll');
    await step('POST', `/${work.id}/ack`);
    await step('POST', `/${work.id}/heartbeat?expected_last_heartbeat=NO_HEARTBEAT`);
    await step('POST', `/${work.id}/stop`, '{"force":true}');
    return trace;
  }

  /** Two claim-lane items drained as the bench's HTTP claimers do: each answer and the items' rows after it. */
  async function platformLoop(baseURL: string, key: string) {
    const environmentId = await seedClaimBacklog(seeding, 2);
    const trace: unknown[] = [];
    const step = async (path: string, body: unknown) => {
      const res = await fetch(`${baseURL}/v1/platform/work${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const text = await res.text();
      const answer = text === '' ? undefined : JSON.parse(text);
      const items = await rows(
        t.db,
        sql`SELECT state, claims, lease_expires_at IS NOT NULL AS leased, stopped_at IS NOT NULL AS stopped
              FROM work_items WHERE environment_id = ${environmentId} ORDER BY created_at`,
      );
      trace.push({
        path: path.replace(/work_\w+/, '<id>'),
        status: res.status,
        answer: shape(answer),
        items,
      });
      return answer as { id: string; lease: string } | null;
    };
    const first = await step('/claim', { kind: 'model_turn', ttl_seconds: 60 });
    const second = await step(`/${first!.id}/complete_and_claim`, {
      lease: first!.lease,
      kind: 'model_turn',
      ttl_seconds: 60,
    });
    await step(`/${second!.id}/complete`, { lease: second!.lease });
    await step('/claim', { kind: 'model_turn', ttl_seconds: 60 });
    return trace;
  }

  it('drains the platform lane as the work API does: the same answers, the same rows after every step', async () => {
    const issued = await fetch(`${leasehold.baseURL}/v1/api_keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${leasehold.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'floor check', scope: 'platform' }),
    });
    expect(issued.status).toBe(201);
    const { key } = (await issued.json()) as { key: string };
    const expected = await platformLoop(leasehold.baseURL, key);
    expect(expected).toHaveLength(4);
    expect(await platformLoop(floor.baseURL, key)).toEqual(expected);
  });

  it('does the wire cycle as the work API does: the same answers, the same rows after every step', async () => {
    const expected = await cycle(leasehold.baseURL);
    expect(expected).toHaveLength(4);
    expect(await cycle(floor.baseURL)).toEqual(expected);
  });
});
