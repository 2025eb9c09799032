/**
 * W3C trace context capture without a propagator: enqueue stores the active span's
 * `traceparent` (and `tracestate`) so whoever runs the item — a claimant in-process or a
 * worker through the poll response headers — can parent its spans on the turn that made it.
 * Built from the span context directly so it works whether or not the host registered a
 * global propagator.
 */
import { context, isSpanContextValid, trace } from '@opentelemetry/api';

export type TraceCarrier = Record<string, string>;

/** The active span's carrier, or null when there is no valid span context. */
export function captureTraceContext(): TraceCarrier | null {
  const span = trace.getSpanContext(context.active());
  if (!span || !isSpanContextValid(span)) return null;
  const flags = (span.traceFlags & 0xff).toString(16).padStart(2, '0');
  const carrier: TraceCarrier = { traceparent: `00-${span.traceId}-${span.spanId}-${flags}` };
  const state = span.traceState?.serialize();
  if (state) carrier.tracestate = state;
  return carrier;
}
