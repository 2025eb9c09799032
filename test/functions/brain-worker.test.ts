/**
 * The brain Worker's edges, without a runtime: its trigger (sent once per request, through the
 * service binding, never failing the request), its one route, and the settings it refuses
 * before it opens anything. The Worker at work is test/worker-e2e/session-loop.test.ts.
 */
import { describe, expect, it, vi } from 'vitest';
import { BRAIN_TRIGGER_URL, brainTrigger } from '../../functions/brain-trigger.js';
import brainWorker from '../../functions/brain-worker.js';

const ctx = () => {
  const waited: Promise<unknown>[] = [];
  return { waited, waitUntil: (p: Promise<unknown>) => void waited.push(p) };
};

describe('the API Worker’s brain trigger', () => {
  it('is absent without a BRAIN binding (turns wait for a brain elsewhere)', () => {
    expect(brainTrigger(undefined, () => {})).toBeUndefined();
    expect(brainTrigger('not a binding', () => {})).toBeUndefined();
  });

  it('POSTs /turns through the binding once per request, after the response (waitUntil)', async () => {
    const fetch = vi.fn(async () => Response.json({ turns: 1, ended: 'empty' }));
    const c = ctx();
    const trigger = brainTrigger({ fetch }, c.waitUntil)!;
    trigger();
    trigger();
    expect(fetch).toHaveBeenCalledTimes(1);
    expect(fetch).toHaveBeenCalledWith(BRAIN_TRIGGER_URL, { method: 'POST' });
    expect(c.waited).toHaveLength(1);
    await c.waited[0];
  });

  it('a brain that cannot be reached, or answers an error, is logged and fails nothing', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      for (const fetch of [
        async () => {
          throw new Error('no such service');
        },
        async () => new Response('{"type":"error"}', { status: 500 }),
      ]) {
        const c = ctx();
        brainTrigger({ fetch }, c.waitUntil)!();
        await expect(c.waited[0]).resolves.toBeUndefined();
      }
      expect(warn.mock.calls.map((c) => String(c[0]))).toEqual([
        expect.stringContaining('could not trigger the brain Worker: no such service'),
        expect.stringContaining('the brain Worker answered 500'),
      ]);
    } finally {
      warn.mockRestore();
    }
  });
});

describe('the brain Worker’s fetch handler', () => {
  const env = {
    DATABASE_URL: 'postgres://brain@db.invalid/leasehold',
    NATS_URL: 'wss://nats.invalid',
    LEASEHOLD_MODEL: 'anthropic',
    LEASEHOLD_MODEL_API_KEY: 'sk-model',
  };
  const post = (e: Record<string, unknown>, path = '/turns', method = 'POST') =>
    brainWorker.fetch(new Request(`https://leasehold-brain${path}`, { method }), e, ctx());

  it('has one route, POST /turns', async () => {
    expect((await post(env, '/')).status).toBe(404);
    expect((await post(env, '/turns', 'GET')).status).toBe(405);
  });

  it('refuses to run without each setting it needs, naming it, before opening anything', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ ...env, DATABASE_URL: undefined }, 'DATABASE_URL is not set'],
        [{ ...env, NATS_URL: undefined }, 'NATS_URL is not set'],
        [{ ...env, LEASEHOLD_MODEL: undefined }, 'LEASEHOLD_MODEL is not set'],
        [{ ...env, LEASEHOLD_MODEL_API_KEY: undefined }, 'needs LEASEHOLD_MODEL_API_KEY'],
        [
          { ...env, LEASEHOLD_MODEL: 'scripted:examples/session-script.json' },
          'is not available on Workers (a Worker has no files',
        ],
      ];
      for (const [e, says] of cases) {
        const res = await post(e);
        expect(res.status).toBe(500);
        const body = (await res.json()) as { type: string; error: { type: string; message: string } };
        expect(body).toMatchObject({ type: 'error', error: { type: 'api_error' } });
        expect(body.error.message).toContain(says);
        expect(body.error.message).not.toContain('sk-model');
      }
    } finally {
      warn.mockRestore();
    }
  });
});
