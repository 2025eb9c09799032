/**
 * The queue's gauges (docs/queue.md, "Telemetry"), through `@opentelemetry/api` only: three
 * asynchronous Int64 gauges — `queue.depth` and `queue.pending` ({item}) and
 * `queue.workers_polling` ({worker}) — fed by one batch callback that reads every self_hosted
 * environment's figures (`environmentSummaries`: `stats`'s definitions, every environment in
 * one statement) and observes each value with `environment.id`. Cloud environments
 * have no poll lane and are not reported. Register once per process; with several replicas
 * every one reports the same values, so read the gauges as max/last, never sum.
 */
import { type BatchObservableCallback, type Meter, metrics, ValueType } from '@opentelemetry/api';
import type { SqlHandle } from '../db/handle.js';
import { withSpan } from '../telemetry/tracing.js';
import { environmentSummaries } from './environment-summaries.js';
import { listSelfHostedEnvironmentIds } from './self-hosted-environments.js';

/** The reference's meter scope, kept so dashboards built on it keep working. */
export const QUEUE_METER_SCOPE = 'github.com/OpenSDLC-Dev/managed-agent-platform/internal/queue';

export interface QueueMetricsRegistration {
  /** Stops the callback; call it before the database it reads closes. */
  unregister(): void;
}

/**
 * Registers the gauges on `meter` (default: the global provider's, a no-op until a host
 * installs an SDK). Each collection reads every environment's figures before observing any,
 * so a failing read aborts the whole collection (the callback rejects) rather than
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
    const snapshots = await withSpan('queue.collect_metrics', {}, async () =>
      environmentSummaries(db, await listSelfHostedEnvironmentIds(db)),
    );
    for (const s of snapshots) {
      const attributes = { 'environment.id': s.environmentId };
      result.observe(depth, s.depth, attributes);
      result.observe(pending, s.pending, attributes);
      result.observe(polling, s.workersPolling, attributes);
    }
  };
  const observables = [depth, pending, polling];
  meter.addBatchObservableCallback(observeAll, observables);
  return { unregister: () => meter.removeBatchObservableCallback(observeAll, observables) };
}
