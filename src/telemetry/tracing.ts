/**
 * Spans for Leasehold's own work, through `@opentelemetry/api` only. With no SDK registered
 * the API hands out no-op spans, so all of this costs next to nothing and records nothing;
 * the host decides (`functions/telemetry.ts` on Node when an OTLP endpoint is configured).
 *
 * Glossary:
 * - **queue span**: `queue.<op>`, one per queue operation, opened by the operation itself
 *   (so in-process callers, cron runs and HTTP handlers all get it), a child of whatever span
 *   is active — usually the request's server span (`server-span.ts`).
 * - **enqueuing span**: the span active when an item was enqueued; its W3C context is the
 *   item's stored `trace_context`, handed to the claimant (Claim's item, Poll's headers).
 * - **hand-out span**: `queue.hand_out`, recorded when poll or claim gives an item away. Its
 *   parent is the enqueuing span, not the poll: the consumer's work parents on the enqueuing
 *   turn too (it gets that context), so hand-out and the work it starts sit side by side in
 *   the turn's trace. It links to the poll/claim span, which links back to the enqueuing
 *   span, so either trace leads to the other.
 *
 * A failed span gets error status and `error.type` = the error's class name, nothing more: a
 * database error's message carries the failed query and its bound parameters.
 */
import {
  type Attributes,
  isSpanContextValid,
  ROOT_CONTEXT,
  type Span,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { remoteSpanContext } from './trace-context.js';
import type { TraceContext } from './trace-header.js';

const TRACER_NAME = 'leasehold';

/**
 * Looked up per span rather than cached: the global provider's proxy tracer binds to the
 * first provider it sees, and a host (or a test) may register one later.
 */
export function tracer(): Tracer {
  return trace.getTracer(TRACER_NAME);
}

/** Runs `fn` inside an active span `name`; a throw marks the span as an error and passes on. */
export function withSpan<T>(
  name: string,
  attributes: Attributes,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  return tracer().startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      markError(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Error status plus `error.type` (by default the error's class name); never the error's message. */
export function markError(span: Span, err: unknown, type: string = errorClass(err)): void {
  span.setStatus({ code: SpanStatusCode.ERROR });
  span.setAttribute('error.type', type);
}

/** `name`, unless it is the generic "Error" a subclass kept (Drizzle's query error does). */
function errorClass(err: unknown): string {
  if (!(err instanceof Error)) return typeof err;
  return err.name === 'Error' ? err.constructor.name : err.name;
}

/**
 * Records that the active span (a poll or claim) handed out an item enqueued under
 * `enqueuedUnder`: a `queue.hand_out` span parented on the enqueuing span and linked to the
 * active one, and a link from the active span to the enqueuing one. Nothing when the item
 * carries no valid trace context.
 */
export function recordHandOut(enqueuedUnder: TraceContext | null, attributes: Attributes): void {
  const enqueuing = remoteSpanContext(enqueuedUnder);
  if (!enqueuing) return;
  const taker = trace.getActiveSpan();
  taker?.addLink({ context: enqueuing });
  const takerContext = taker?.spanContext();
  const links = takerContext && isSpanContextValid(takerContext) ? [{ context: takerContext }] : [];
  tracer()
    .startSpan('queue.hand_out', { attributes, links }, trace.setSpanContext(ROOT_CONTEXT, enqueuing))
    .end();
}
