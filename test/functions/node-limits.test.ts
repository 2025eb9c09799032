import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { environmentWithKey } from '../helpers/api.js';
import { useTestDb } from '../helpers/db.js';
import { type RunningServer, startServer } from '../helpers/server.js';

describe('the Node server’s long-poll caps', () => {
  const t = useTestDb('pg');
  let server: RunningServer;

  beforeAll(async () => {
    server = await startServer({ databaseUrl: t.url!, env: { LEASEHOLD_LONG_POLLS_PER_KEY: '1' } });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('LEASEHOLD_LONG_POLLS_PER_KEY reaches the gate: a second concurrent long poll on the key is 429', async () => {
    const e = await environmentWithKey(t.db);
    const poll = () =>
      fetch(`${server.baseURL}/v1/environments/${e.environmentId}/work/poll?block_ms=999`, {
        headers: { authorization: `Bearer ${e.key}` },
      });
    // The key resolves once first, so both polls below reach the gate at the same moment.
    expect(
      (
        await fetch(`${server.baseURL}/v1/environments/${e.environmentId}/work/poll`, {
          headers: { authorization: `Bearer ${e.key}` },
        })
      ).status,
    ).toBe(200);
    const statuses = (await Promise.all([poll(), poll()])).map((r) => r.status).sort();
    expect(statuses).toEqual([200, 429]);
  });
});
