import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { type Database, maybeRow } from '../../src/db/handle.js';
import { newId } from '../../src/ids.js';
import { testApi } from '../helpers/api.js';
import { countingDb } from '../helpers/counting-db.js';
import { useTestDb } from '../helpers/db.js';
import { lapseLease, leaseWindowMs, readWork } from '../helpers/factories.js';
import { errorType, PLATFORM, platformSetup } from '../helpers/platform.js';

describe('POST /v1/platform/work/{id}/extend', () => {
  const t = useTestDb('pg');

  it('answers a new proof and renews the lease to ttl from now', async () => {
    const p = await platformSetup(t.db);
    await p.enqueue('model_turn');
    const item = (await p.claim('model_turn', 10))!;
    const res = await p.post(`/work/${item.id}/extend`, { lease: item.lease, ttl_seconds: 120 });
    expect(res.status).toBe(200);
    const { lease } = (await res.json()) as { lease: string };
    expect(lease).not.toBe(item.lease);
    expect(await readWork(t.db, item.id)).toMatchObject({ state: 'active', lease });
    expect(await leaseWindowMs(t.db, item.id)).toBeCloseTo(120_000, 0);
  });

  it('the proof from before an extend is stale: 409 lease_lost_error, x-should-retry false, holder untouched', async () => {
    const p = await platformSetup(t.db);
    await p.enqueue('model_turn');
    const item = (await p.claim('model_turn'))!;
    const { lease } = (await (
      await p.post(`/work/${item.id}/extend`, { lease: item.lease, ttl_seconds: 60 })
    ).json()) as {
      lease: string;
    };
    for (const [verb, body] of [
      ['extend', { lease: item.lease, ttl_seconds: 60 }],
      ['complete', { lease: item.lease }],
      ['requeue', { lease: item.lease }],
    ] as const) {
      const res = await p.post(`/work/${item.id}/${verb}`, body);
      expect(res.headers.get('x-should-retry')).toBe('false');
      expect(await errorType(res, 409)).toBe('lease_lost_error');
    }
    expect(await readWork(t.db, item.id)).toMatchObject({ state: 'active', lease });
    expect((await p.post(`/work/${item.id}/complete`, { lease })).status).toBe(204);
  });

  it('a lapsed lease nobody reclaimed yet is still its holder’s to renew', async () => {
    const p = await platformSetup(t.db);
    await p.enqueue('web_exec');
    const item = (await p.claim('web_exec'))!;
    await lapseLease(t.db, item.id);
    const { lease: lapsed } = (await readWork(t.db, item.id))!;
    const res = await p.post(`/work/${item.id}/extend`, { lease: lapsed, ttl_seconds: 60 });
    expect(res.status).toBe(200);
    expect(await p.claim('web_exec')).toBeNull();
  });

  it('a lease that is not a timestamp Postgres takes is a 409 lease_lost_error and never reaches SQL', async () => {
    const p = await platformSetup(t.db);
    await p.enqueue('model_turn');
    const item = (await p.claim('model_turn'))!;
    const counted = countingDb(t.db);
    const api = testApi(counted.db);
    for (const [i, lease] of [
      '',
      'not a lease',
      "2026-01-01T00:00:00Z'; DROP TABLE work_items; --",
      '2026-02-30T00:00:00Z',
      '2026-01-01 00:00:00Z',
      '2026-01-01T00:00:00',
      '2026-01-01T00:00:00+23:59',
      `2026-01-01T00:00:00.${'1'.repeat(200)}Z`,
    ].entries()) {
      counted.statements = 0;
      const res = await api.call('POST', `${PLATFORM}/work/${item.id}/extend`, {
        key: p.key,
        body: { lease, ttl_seconds: 60 },
      });
      expect(await errorType(res, 409)).toBe('lease_lost_error');
      // The credential lookup (remembered after the first request), nothing else.
      expect(counted.statements).toBe(i === 0 ? 1 : 0);
    }
    expect(await readWork(t.db, item.id)).toMatchObject({ state: 'active', lease: item.lease });
  });

  it('the same instant written with an offset is the same proof', async () => {
    const p = await platformSetup(t.db);
    await p.enqueue('model_turn');
    const item = (await p.claim('model_turn'))!;
    const shifted = await shiftedByOneHour(t.db, item.lease);
    const res = await p.post(`/work/${item.id}/extend`, { lease: shifted, ttl_seconds: 60 });
    expect(res.status).toBe(200);
  });

  it('a malformed work id is a 404; a well-formed unknown id is a lost lease', async () => {
    const p = await platformSetup(t.db);
    await p.enqueue('model_turn');
    const item = (await p.claim('model_turn'))!;
    for (const id of ['nope', 'work_short', newId('env'), item.id.toUpperCase()]) {
      const res = await p.post(`/work/${id}/extend`, { lease: item.lease, ttl_seconds: 60 });
      expect(await errorType(res, 404)).toBe('not_found_error');
    }
    const res = await p.post(`/work/${newId('work')}/extend`, { lease: item.lease, ttl_seconds: 60 });
    expect(await errorType(res, 409)).toBe('lease_lost_error');
  });

  it('ttl_seconds out of (0, 3600], a missing lease or an unknown field is a 400 and leaves the lease', async () => {
    const p = await platformSetup(t.db);
    await p.enqueue('model_turn');
    const item = (await p.claim('model_turn'))!;
    for (const body of [
      { lease: item.lease, ttl_seconds: 0 },
      { lease: item.lease, ttl_seconds: 3601 },
      { lease: item.lease },
      { ttl_seconds: 60 },
      { lease: 42, ttl_seconds: 60 },
      { lease: item.lease, ttl_seconds: 60, force: true },
      undefined,
    ]) {
      expect(await errorType(await p.post(`/work/${item.id}/extend`, body), 400)).toBe(
        'invalid_request_error',
      );
    }
    expect((await readWork(t.db, item.id))!.lease).toBe(item.lease);
  });
});

/** The same instant rendered at +01:00, in the database (a JS Date would drop its microseconds). */
async function shiftedByOneHour(db: Database, lease: string): Promise<string> {
  const row = await maybeRow<{ s: string }>(
    db,
    sql`SELECT to_char(${lease}::timestamptz AT TIME ZONE 'UTC' + interval '1 hour', 'YYYY-MM-DD"T"HH24:MI:SS.US') || '+01:00' AS s`,
  );
  return row!.s;
}
