/**
 * The queue's gauges (docs/queue.md, "Telemetry"), through `@opentelemetry/api` only: three
 * asynchronous Int64 gauges — `queue.depth` and `queue.pending` ({item}) and
 * `queue.workers_polling` ({worker}) — fed by one batch callback that runs `stats` for every
 * self_hosted environment and observes each value with `environment.id`. Cloud environments
 * have no poll lane and are not reported. Register once per process; with several replicas
 * every one reports the same values, so read the gauges as max/last, never sum.
 */
import { type BatchObservableCallback, type Meter, metrics, ValueType } from '@opentelemetry/api';
import type { SqlHandle } from '../db/handle.js';
import { withSpan } from '../telemetry/tracing.js';
import { listSelfHostedEnvironmentIds } from './self-hosted-environments.js';
import { stats } from './stats.js';
import type { WorkStats } from './types.js';

/** The reference's meter scope, kept so dashboards built on it keep working. */
export const QUEUE_METER_SCOPE = 'github.com/OpenSDLC-Dev/managed-agent-platform/internal/queue';

export interface QueueMetricsRegistration {
  /** Stops the callback; call it before the database it reads closes. */
  unregister(): void;
}

/**
 * Registers the gauges on `meter` (default: the global provider's, a no-op until a host
 * installs an SDK). Each collection reads every environment's stats before observing any,
 * so a failing `stats` aborts the whole collection (the callback rejects) rather than
 * reporting some environments and silently dropping others.
 */
export function registerQueueMetrics(
  db: SqlHandle,
  meter: Meter = metrics.getMeter(QUEUE_METER_SCOPE),
): QueueMetricsRegistration {
  const gauge = (name: string, unit: string, description: string) =>
    meter.createObservableGauge(name, { unit, description, valueType: ValueType.INT });
  const depth = gauge('queue.depth', '{item}', 'Queued poll-lane items a worker can take now');
  const pending = gauge('queue.pending', '{item}', 'Queued poll-lane items under a live poll reservation');
  const polling = gauge('queue.workers_polling', '{worker}', 'Distinct workers that polled recently');

  const observeAll: BatchObservableCallback = async (result) => {
    const snapshots = await withSpan('queue.collect_metrics', {}, async () => {
      const all: Array<[string, WorkStats]> = [];
      for (const id of await listSelfHostedEnvironmentIds(db)) all.push([id, await stats(db, id)]);
      return all;
    });
    for (const [id, s] of snapshots) {
      const attributes = { 'environment.id': id };
      result.observe(depth, s.depth, attributes);
      result.observe(pending, s.pending, attributes);
      result.observe(polling, s.workersPolling, attributes);
    }
  };
  const observables = [depth, pending, polling];
  meter.addBatchObservableCallback(observeAll, observables);
  return { unregister: () => meter.removeBatchObservableCallback(observeAll, observables) };
}
