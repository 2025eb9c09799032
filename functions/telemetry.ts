/**
 * OpenTelemetry on Node. With an OTLP endpoint configured it installs, as the API's
 * globals, an AsyncLocalStorage context manager, a tracer provider (batched OTLP/HTTP span
 * export) and a meter provider (OTLP/HTTP metric export every minute), and registers the
 * queue gauges (docs/queue.md, "Telemetry"). Without one it installs nothing: `src/`'s spans and
 * gauges stay the API's no-ops and `shutdown()` does nothing.
 *
 * The exporters also read the rest of the standard OTEL_EXPORTER_OTLP_* settings (headers,
 * timeout, compression) from the environment themselves; only the endpoint is ours.
 */
import { context, type DiagLogger, DiagLogLevel, diag, metrics, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  AggregationTemporalityPreference,
  OTLPMetricExporter,
} from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Logger } from '../src/api/types.js';
import type { Config } from '../src/config.js';
import type { SqlHandle } from '../src/db/handle.js';
import { QUEUE_METER_SCOPE, registerQueueMetrics } from '../src/queue/index.js';

export const SERVICE_NAME = 'leasehold';
/** The SDK's default export interval; the gauges cost one stats query per self_hosted environment. */
export const METRICS_EVERY_MS = 60_000;

export interface Telemetry {
  /**
   * Exports a last collection, unregisters the gauges, then flushes and stops both providers.
   * Call it before the database closes: the last collection still reads it, nothing after.
   */
  shutdown(): Promise<void>;
}

export function startTelemetry(
  config: Pick<Config, 'otlpEndpoint'>,
  db: SqlHandle,
  log: Logger & { info(message: string): void },
  options: { metricsEveryMs?: number } = {},
): Telemetry {
  const endpoint = config.otlpEndpoint;
  if (!endpoint) return { shutdown: async () => {} };

  diag.setLogger(diagToLog(log), DiagLogLevel.WARN);
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  const resource = defaultResource().merge(resourceFromAttributes({ 'service.name': SERVICE_NAME }));

  const spanExporter = new OTLPTraceExporter({ url: signalUrl(endpoint, 'traces') });
  const tracerProvider = new BasicTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(spanExporter)],
  });
  trace.setGlobalTracerProvider(tracerProvider);

  const reader = new PeriodicExportingMetricReader({
    exporter: new OTLPMetricExporter({
      url: signalUrl(endpoint, 'metrics'),
      // Our only instruments are gauges. Under cumulative temporality the SDK re-exports a
      // series' last value after it stops being observed (an aborted collection, a deleted
      // environment); delta exports only what this collection saw. OTLP gauges carry no
      // temporality, so a backend sees no other difference.
      temporalityPreference: AggregationTemporalityPreference.DELTA,
    }),
    exportIntervalMillis: options.metricsEveryMs ?? METRICS_EVERY_MS,
  });
  const meterProvider = new MeterProvider({ resource, readers: [reader] });
  metrics.setGlobalMeterProvider(meterProvider);
  const gauges = registerQueueMetrics(db, meterProvider.getMeter(QUEUE_METER_SCOPE));
  log.info(`telemetry: OTLP traces and metrics to ${new URL(endpoint).origin}`);

  return {
    async shutdown() {
      const settled = await Promise.allSettled([reader.forceFlush()]);
      gauges.unregister();
      settled.push(...(await Promise.allSettled([meterProvider.shutdown(), tracerProvider.shutdown()])));
      for (const r of settled) {
        if (r.status === 'rejected') log.warn('telemetry shutdown', { error: String(r.reason) });
      }
      trace.disable();
      metrics.disable();
      context.disable();
      diag.disable();
    },
  };
}

/** OTLP/HTTP's rule for the generic endpoint: the signal's path is appended to the base URL. */
export function signalUrl(endpoint: string, signal: 'traces' | 'metrics'): string {
  return `${endpoint.replace(/\/+$/, '')}/v1/${signal}`;
}

/** The SDK's own complaints (failed exports, collection errors) go to our log as warnings. */
function diagToLog(log: Logger): DiagLogger {
  const warn = (message: string, ...args: unknown[]) =>
    log.warn(`otel: ${message}`, args.length ? { details: args.map(describe) } : undefined);
  const ignore = () => {};
  return { error: warn, warn, info: ignore, debug: ignore, verbose: ignore };
}

/**
 * An error as a log may show it: a wrapped error (Drizzle's query error) by its cause's
 * message, since the wrapper's own message carries the query text and bound parameters.
 */
function describe(value: unknown): string {
  if (!(value instanceof Error)) return String(value);
  const message = value.cause instanceof Error ? value.cause.message : value.message;
  return `${value.name}: ${message}`;
}
