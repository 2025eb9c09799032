/**
 * The platform lane's response shapes. Unlike the worker wire (`wire.ts`), the platform sees
 * every kind and the trace context: it runs the items itself, parented on the turn that made them.
 */
import * as z from 'zod/mini';
import type { Item, Work } from '../../queue/index.js';
import { toWireWork, wireWorkSchema } from '../wire.js';
import { kindSchema } from './platform-scope.js';

/** The wire work shape plus its `kind`. */
export function toPlatformWork(w: Work) {
  return { ...toWireWork(w), kind: w.kind };
}

export const platformWorkSchema = z.extend(wireWorkSchema, { kind: kindSchema });

/** A claimed item; `lease` is the opaque proof every later write by the holder echoes. */
export function toPlatformItem(item: Item) {
  return {
    id: item.id,
    environment_id: item.environmentId,
    session_id: item.sessionId,
    kind: item.kind,
    lease: item.lease,
    reclaimed: item.reclaimed,
    claims: item.claims,
    metadata: item.metadata,
    trace_context: item.traceContext,
  };
}

export type PlatformItem = ReturnType<typeof toPlatformItem>;

const traceContextSchema = z
  .object({ traceparent: z.string(), tracestate: z.optional(z.string()) })
  .check(z.describe('W3C trace context captured at enqueue'));

export const platformItemSchema = z.object({
  id: z.string(),
  environment_id: z.string(),
  session_id: z.string(),
  kind: kindSchema,
  lease: z.string().check(z.describe('opaque lease proof; echo it exactly')),
  reclaimed: z
    .boolean()
    .check(z.describe('the previous holder let its lease lapse: recover before replaying')),
  claims: z.int().check(z.describe('how many times the item has been handed out, this time included')),
  metadata: z.record(z.string(), z.string()),
  trace_context: z.nullable(traceContextSchema),
});
