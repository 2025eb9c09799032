/**
 * W3C trace context arriving on a request (`traceparent`, `tracestate` headers), kept as the
 * carrier enqueue stores, so a platform caller's turn parents the spans of the work it queues.
 * Invalid input is ignored, never refused: per W3C, a receiver that cannot parse
 * `traceparent` starts a new trace (here: falls back to the active span, if any).
 */

/** A W3C trace context carrier, as enqueue stores it with an item: `{ traceparent, tracestate? }`. */
export type TraceContext = Record<string, string>;

/**
 * Version 00 only, lowercase hex as the W3C grammar has it. Several `traceparent` headers
 * arrive joined by ", " and so fail this too, which W3C asks for.
 */
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;
const ZERO_TRACE_ID = '0'.repeat(32);
const ZERO_SPAN_ID = '0'.repeat(16);
/** W3C's propagation floor for tracestate; a longer one is dropped rather than stored whole. */
const MAX_TRACESTATE = 512;

/** The carrier of a valid `traceparent` (with `tracestate` when present and sane), else undefined. */
export function traceContextFromHeaders(
  traceparent: string | undefined,
  tracestate: string | undefined,
): TraceContext | undefined {
  const m = traceparent === undefined ? null : TRACEPARENT.exec(traceparent.trim());
  // All-zero ids are explicitly invalid in W3C trace context.
  if (!m || m[1] === ZERO_TRACE_ID || m[2] === ZERO_SPAN_ID) return undefined;
  const carrier: TraceContext = { traceparent: m[0] };
  const state = tracestate?.trim();
  if (state && state.length <= MAX_TRACESTATE) carrier.tracestate = state;
  return carrier;
}
