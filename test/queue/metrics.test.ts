import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { sql } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';
import { enqueue, poll, QUEUE_METER_SCOPE, recordPoll, registerQueueMetrics } from '../../src/queue/index.js';
import { useTestDb } from '../helpers/db.js';
import { createSession, setupSession } from '../helpers/factories.js';

/** Far beyond any test: the reader only exports when a test flushes it. */
const NEVER_MS = 3_600_000;

interface Collected {
  /** metric name → environment.id → value */
  values: Map<string, Map<string, number>>;
  units: Map<string, string>;
  scopes: string[];
}

/**
 * A meter provider with an in-memory exporter; `collect()` flushes one collection and
 * reads what it exported. Delta temporality, as the Node host configures its OTLP exporter:
 * under cumulative the SDK re-exports a gauge series' last value after it stops being
 * observed, which would hide an aborted collection or an unregister.
 */
function setup() {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.DELTA);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: NEVER_MS });
  const provider = new MeterProvider({ readers: [reader] });
  providers.push(provider);
  const collect = async (): Promise<Collected> => {
    exporter.reset();
    await reader.forceFlush();
    const out: Collected = { values: new Map(), units: new Map(), scopes: [] };
    for (const resource of exporter.getMetrics()) {
      for (const scope of resource.scopeMetrics) {
        out.scopes.push(scope.scope.name);
        for (const metric of scope.metrics) {
          out.units.set(metric.descriptor.name, metric.descriptor.unit);
          const byEnv = out.values.get(metric.descriptor.name) ?? new Map<string, number>();
          for (const point of metric.dataPoints) {
            byEnv.set(String(point.attributes['environment.id']), point.value as number);
          }
          out.values.set(metric.descriptor.name, byEnv);
        }
      }
    }
    return out;
  };
  return { meter: provider.getMeter(QUEUE_METER_SCOPE), collect };
}

const providers: MeterProvider[] = [];
afterEach(async () => {
  await Promise.all(providers.splice(0).map((p) => p.shutdown()));
});

describe('queue metrics', () => {
  const t = useTestDb('pg');

  it('a self_hosted environment with two queued items, one polled, reports depth 1 and pending 1', async () => {
    const { environmentId, sessionId } = await setupSession(t.db);
    const other = await createSession(t.db, environmentId);
    await enqueue(t.db, { environmentId, sessionId, kind: 'tool_exec' });
    await enqueue(t.db, { environmentId, sessionId: other, kind: 'tool_exec' });
    await poll(t.db, environmentId, 60_000);
    await recordPoll(t.db, environmentId, 'worker-a');
    await recordPoll(t.db, environmentId, 'worker-b');

    const { meter, collect } = setup();
    registerQueueMetrics(t.db, meter);
    const got = await collect();

    expect(got.scopes).toEqual([QUEUE_METER_SCOPE]);
    expect(got.values.get('queue.depth')).toEqual(new Map([[environmentId, 1]]));
    expect(got.values.get('queue.pending')).toEqual(new Map([[environmentId, 1]]));
    expect(got.values.get('queue.workers_polling')).toEqual(new Map([[environmentId, 2]]));
    expect(Object.fromEntries(got.units)).toEqual({
      'queue.depth': '{item}',
      'queue.pending': '{item}',
      'queue.workers_polling': '{worker}',
    });
  });

  it('every self_hosted environment is reported, archived or empty; a cloud environment never is', async () => {
    const busy = await setupSession(t.db);
    const empty = await setupSession(t.db);
    await t.db.execute(sql`UPDATE environments SET archived_at = now() WHERE id = ${empty.environmentId}`);
    const cloud = await setupSession(t.db, 'cloud');
    await enqueue(t.db, { ...busy, kind: 'tool_exec' });
    await enqueue(t.db, { ...cloud, kind: 'tool_exec' });
    await recordPoll(t.db, cloud.environmentId, 'worker-c');

    const { meter, collect } = setup();
    registerQueueMetrics(t.db, meter);
    const got = await collect();

    for (const name of ['queue.depth', 'queue.pending', 'queue.workers_polling']) {
      expect([...got.values.get(name)!.keys()].sort(), name).toEqual(
        [busy.environmentId, empty.environmentId].sort(),
      );
    }
    expect(got.values.get('queue.depth')!.get(busy.environmentId)).toBe(1);
    expect(got.values.get('queue.depth')!.get(empty.environmentId)).toBe(0);
  });

  it('each collection reads the queue afresh', async () => {
    const { environmentId, sessionId } = await setupSession(t.db);
    const { meter, collect } = setup();
    registerQueueMetrics(t.db, meter);
    expect((await collect()).values.get('queue.depth')!.get(environmentId)).toBe(0);
    await enqueue(t.db, { environmentId, sessionId, kind: 'tool_exec' });
    expect((await collect()).values.get('queue.depth')!.get(environmentId)).toBe(1);
    await poll(t.db, environmentId, 60_000);
    const got = await collect();
    expect(got.values.get('queue.depth')!.get(environmentId)).toBe(0);
    expect(got.values.get('queue.pending')!.get(environmentId)).toBe(1);
  });

  it('a stats failure aborts the collection: no environment is reported from it', async () => {
    const a = await setupSession(t.db);
    const b = await setupSession(t.db);
    await enqueue(t.db, { ...a, kind: 'tool_exec' });
    const { meter, collect } = setup();
    registerQueueMetrics(t.db, meter);
    expect((await collect()).values.get('queue.depth')?.size).toBe(2);
    // A real failure of the statement stats runs; the environment listing still works.
    await t.db.execute(sql`ALTER TABLE worker_polls RENAME TO worker_polls_away`);
    try {
      const got = await collect();
      for (const name of ['queue.depth', 'queue.pending', 'queue.workers_polling']) {
        expect(got.values.get(name)?.size ?? 0, name).toBe(0);
      }
    } finally {
      await t.db.execute(sql`ALTER TABLE worker_polls_away RENAME TO worker_polls`);
    }
    expect((await collect()).values.get('queue.depth')?.get(b.environmentId)).toBe(0);
  });

  it('after unregister a collection observes nothing and runs no query', async () => {
    const { environmentId } = await setupSession(t.db);
    let queries = 0;
    const counted = {
      execute: (q: Parameters<typeof t.db.execute>[0]) => {
        queries++;
        return t.db.execute(q);
      },
    };
    const { meter, collect } = setup();
    const registration = registerQueueMetrics(counted, meter);
    expect((await collect()).values.get('queue.depth')?.has(environmentId)).toBe(true);
    expect(queries).toBe(2);
    registration.unregister();
    const after = await collect();
    for (const name of ['queue.depth', 'queue.pending', 'queue.workers_polling']) {
      expect(after.values.get(name)?.size ?? 0, name).toBe(0);
    }
    expect(queries).toBe(2);
  });
});
