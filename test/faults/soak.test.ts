/**
 * Soak (docs/guarantees.md): the Node server under a steady, open-loop mix of the work API —
 * enqueue, poll, ack, heartbeat, stop, list and stats — for ten minutes at full scale. The
 * server reports its own heap after a forced collection (`soak/heap-probe.mjs`), so growth
 * means retained memory. Passes with zero errors and a heap slope under the bound after the
 * warm-up; latency percentiles are recorded, not judged (they belong to the benchmarks).
 */
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiKey, environmentWithKey, type TestEnvironment } from '../helpers/api.js';
import { useTestDb } from '../helpers/db.js';
import { atScale, recordFault } from '../helpers/faults.js';
import { type RunningServer, startServer } from '../helpers/server.js';

const RATE = atScale(150, 300); // requests per second, steady
const WARMUP_S = atScale(10, 60);
const MEASURE_S = atScale(30, 600);
const PROBE_MS = atScale(3_000, 10_000);
/** Heap growth bound after warm-up, MB per minute: the 1 at full length; looser over a short run. */
const SLOPE_BOUND = atScale(4, 1);
/** Requests in flight beyond which the generator counts itself behind instead of piling on. */
const MAX_IN_FLIGHT = 64;

const t = useTestDb('pg');
let server: RunningServer;
let env: TestEnvironment;
let platformKey: string;
const probeFile = path.join(tmpdir(), `leasehold-heap-${process.pid}-${Date.now()}.jsonl`);

beforeAll(async () => {
  const probe = pathToFileURL(path.join(import.meta.dirname, 'soak/heap-probe.mjs')).href;
  server = await startServer({
    databaseUrl: t.url!,
    env: {
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${probe}`.trim(),
      LEASEHOLD_HEAP_PROBE_FILE: probeFile,
      LEASEHOLD_HEAP_PROBE_MS: String(PROBE_MS),
    },
  });
});

afterAll(async () => {
  await server?.stop();
  await rm(probeFile, { force: true });
});

type Op = 'enqueue' | 'poll' | 'ack' | 'heartbeat' | 'stop' | 'list' | 'stats';

interface Held {
  id: string;
  lastHeartbeat: string;
}

describe('soak', () => {
  it(
    'serves a steady mixed load with zero errors and a flat heap after warm-up',
    async (ctx) => {
      env = await environmentWithKey(t.db, 'self_hosted');
      platformKey = await apiKey(t.db, 'platform');
      const work = `${server.baseURL}/v1/environments/${env.environmentId}/work`;
      const envAuth = { authorization: `Bearer ${env.key}` };

      const latencies = new Map<Op, number[]>();
      const errors: string[] = [];
      let behind = 0;
      let inFlight = 0;
      let sessions = 0;
      const toAck: string[] = [];
      const held: Held[] = [];

      const request = async (op: Op, url: string, init: RequestInit, ok: (status: number) => boolean) => {
        const started = performance.now();
        try {
          const res = await fetch(url, init);
          const text = await res.text();
          const ms = performance.now() - started;
          if (!ok(res.status)) {
            errors.push(`${op} ${res.status} ${text.slice(0, 200)}`);
            return null;
          }
          const list = latencies.get(op) ?? [];
          latencies.set(op, list);
          list.push(ms);
          return text;
        } catch (err) {
          errors.push(`${op} ${(err as Error).message}`);
          return null;
        }
      };
      const post = (body?: unknown, auth: Record<string, string> = envAuth): RequestInit => ({
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });

      // One operation of the mix: 60 % poll (an ack stands in when an item is
      // waiting for one), 15 % heartbeat, 10 % enqueue, 10 % stop, 5 % list or stats. An item
      // is taken out of `held` while a call on it is in flight, so two calls never race on it.
      const operate = async () => {
        const roll = Math.random();
        if (roll < 0.1) {
          const body = {
            environment_id: env.environmentId,
            session_id: `sesn_soak_${++sessions}`,
            kind: 'tool_exec',
          };
          await request(
            'enqueue',
            `${server.baseURL}/v1/platform/work`,
            post(body, { authorization: `Bearer ${platformKey}` }),
            (s) => s === 201,
          );
        } else if (roll < 0.2 && held.length > 0) {
          const item = held.shift()!;
          await request('stop', `${work}/${item.id}/stop`, post({}), (s) => s === 200);
        } else if (roll < 0.35 && held.length > 0) {
          const item = held.shift()!;
          const query = `expected_last_heartbeat=${encodeURIComponent(item.lastHeartbeat)}&desired_ttl_seconds=60`;
          const text = await request(
            'heartbeat',
            `${work}/${item.id}/heartbeat?${query}`,
            post(),
            (s) => s === 200,
          );
          if (text)
            held.push({
              id: item.id,
              lastHeartbeat: (JSON.parse(text) as { last_heartbeat: string }).last_heartbeat,
            });
        } else if (roll < 0.4) {
          if (Math.random() < 0.5)
            await request('list', `${work}?limit=20`, { headers: envAuth }, (s) => s === 200);
          else await request('stats', `${work}/stats`, { headers: envAuth }, (s) => s === 200);
        } else if (toAck.length > 0) {
          const id = toAck.shift()!;
          const text = await request('ack', `${work}/${id}/ack`, post(), (s) => s >= 200 && s < 300);
          if (text !== null) held.push({ id, lastHeartbeat: 'NO_HEARTBEAT' });
        } else {
          const headers = { ...envAuth, 'anthropic-worker-id': `soak-${Math.floor(Math.random() * 32)}` };
          const text = await request('poll', `${work}/poll`, { headers }, (s) => s === 200);
          const item = text ? (JSON.parse(text) as { id: string } | null) : null;
          if (item) toAck.push(item.id);
        }
      };

      // Open loop: a fixed number of starts per 10 ms tick, whatever the answers take.
      const totalS = WARMUP_S + MEASURE_S;
      const startedAt = performance.now();
      let started = 0;
      const pending = new Set<Promise<void>>();
      while (performance.now() - startedAt < totalS * 1_000) {
        const due = Math.floor(((performance.now() - startedAt) / 1_000) * RATE);
        while (started < due) {
          started++;
          if (inFlight >= MAX_IN_FLIGHT) {
            behind++;
            continue;
          }
          inFlight++;
          const p = operate().finally(() => {
            inFlight--;
            pending.delete(p);
          });
          pending.add(p);
        }
        await new Promise((r) => setTimeout(r, 10));
      }
      await Promise.all(pending);
      // One more probe line after the load, so the last sample covers the end of the run.
      await new Promise((r) => setTimeout(r, PROBE_MS + 500));

      const samples = (await readFile(probeFile, 'utf8'))
        .trim()
        .split('\n')
        .map(
          (line) =>
            JSON.parse(line) as {
              pid: number;
              at: number;
              heapUsed: number;
              rss: number;
              fds: number;
              sockets: number;
            },
        );
      const firstAt = samples[0]!.at;
      const measured = samples.filter((s) => (s.at - firstAt) / 1_000 >= WARMUP_S);
      const slope = slopeMbPerMinute(measured.map((s) => [(s.at - firstAt) / 60_000, s.heapUsed / 2 ** 20]));
      const all = [...latencies.values()].flat();
      const sent = all.length + errors.length;
      const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
      const perOp = [...latencies]
        .map(([op, list]) => `${op} ${percentile(list, 0.99).toFixed(1)}`)
        .join(', ');

      recordFault(ctx, {
        load: `${RATE} req/s open loop for ${WARMUP_S} s warm-up + ${MEASURE_S} s (60 % poll/ack, 15 % heartbeat, 10 % enqueue, 10 % stop, 5 % list/stats)`,
        faults: 'none (steady load)',
        result:
          `${sent.toLocaleString('en')} requests, ${errors.length} errors, ${behind} starts skipped (behind); ` +
          `p50 ${percentile(all, 0.5).toFixed(1)} ms, p99 ${percentile(all, 0.99).toFixed(1)} ms (p99 by op: ${perOp}); ` +
          `heap after GC ${mb(measured[0]!.heapUsed)} → ${mb(measured.at(-1)!.heapUsed)} MB, slope ${slope.toFixed(2)} MB/min; ` +
          `RSS ${mb(measured[0]!.rss)} → ${mb(measured.at(-1)!.rss)} MB; fds ${measured[0]!.fds} → ${measured.at(-1)!.fds} ` +
          `(sockets ${measured[0]!.sockets} → ${measured.at(-1)!.sockets})`,
      });

      // One process reported: the server's, not its launcher's as well.
      expect(new Set(samples.map((s) => s.pid)).size).toBe(1);
      expect(errors.slice(0, 10)).toEqual([]);
      // The generator kept up: an overloaded run would measure a different load than stated.
      expect(behind).toBeLessThan(started * 0.01);
      expect(measured.length).toBeGreaterThanOrEqual(5);
      expect(slope).toBeLessThan(SLOPE_BOUND);
      // Files, pipes and the like stay put. Sockets follow the client: fetch opens another
      // connection whenever every open one is busy and keeps it alive for a while, so a slow
      // stretch leaves more of them open; never more than the requests it had in flight.
      const others = (s: { fds: number; sockets: number }) => s.fds - s.sockets;
      expect(others(measured.at(-1)!) - others(measured[0]!)).toBeLessThanOrEqual(4);
      expect(measured.at(-1)!.sockets - measured[0]!.sockets).toBeLessThanOrEqual(MAX_IN_FLIGHT);
    },
    (WARMUP_S + MEASURE_S) * 1_000 + 120_000,
  );
});

/** Least-squares slope of y over x. */
function slopeMbPerMinute(points: Array<[number, number]>): number {
  const n = points.length;
  const mx = points.reduce((a, [x]) => a + x, 0) / n;
  const my = points.reduce((a, [, y]) => a + y, 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return num / den;
}

function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}
