/**
 * W3C trace context capture without a propagator: enqueue stores the active span's
 * `traceparent` (and `tracestate`) so whoever runs the item — a claimant in-process or a
 * worker through the poll response headers — can parent its spans on the turn that made it.
 * Built from the span context directly so it works whether or not the host registered a
 * global propagator. `remoteContext` is the way back: a carrier (stored, or a request's
 * headers) as a context whose parent is that remote span.
 */
import {
  type Context,
  context,
  createTraceState,
  isSpanContextValid,
  type SpanContext,
  trace,
} from '@opentelemetry/api';
import { type TraceContext, traceContextFromHeaders } from './trace-header.js';

/** The active span's carrier, or null when there is no valid span context. */
export function captureTraceContext(): TraceContext | null {
  const span = trace.getSpanContext(context.active());
  if (!span || !isSpanContextValid(span)) return null;
  const flags = (span.traceFlags & 0xff).toString(16).padStart(2, '0');
  const carrier: TraceContext = { traceparent: `00-${span.traceId}-${span.spanId}-${flags}` };
  const state = span.traceState?.serialize();
  if (state) carrier.tracestate = state;
  return carrier;
}

/**
 * `base` with the carrier's span as its (remote) parent; `base` unchanged when the carrier
 * has no valid `traceparent` — W3C's "cannot parse it, start a new trace". The tiny W3C
 * extractor: `traceContextFromHeaders` validates, `trace.setSpanContext` installs.
 */
export function remoteContext(
  carrier: { traceparent?: string | undefined; tracestate?: string | undefined } | null | undefined,
  base: Context = context.active(),
): Context {
  const parent = remoteSpanContext(carrier);
  return parent ? trace.setSpanContext(base, parent) : base;
}

/** The carrier's span context, marked remote, or undefined when it has no valid `traceparent`. */
export function remoteSpanContext(
  carrier: { traceparent?: string | undefined; tracestate?: string | undefined } | null | undefined,
): SpanContext | undefined {
  const valid = traceContextFromHeaders(carrier?.traceparent, carrier?.tracestate);
  if (!valid) return undefined;
  const [, traceId, spanId, flags] = valid.traceparent!.split('-') as [string, string, string, string];
  const parent: SpanContext = { traceId, spanId, traceFlags: Number.parseInt(flags, 16), isRemote: true };
  if (valid.tracestate) parent.traceState = createTraceState(valid.tracestate);
  return parent;
}
