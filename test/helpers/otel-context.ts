/**
 * Registers an AsyncLocalStorage context manager with the OpenTelemetry API, as a host's
 * SDK would: without one, `context.with` is a no-op and no span is ever active.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import {
  type Context,
  type ContextManager,
  context,
  ROOT_CONTEXT,
  TraceFlags,
  trace,
} from '@opentelemetry/api';

class AlsContextManager implements ContextManager {
  private readonly storage = new AsyncLocalStorage<Context>();
  active(): Context {
    return this.storage.getStore() ?? ROOT_CONTEXT;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    ctx: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    return this.storage.run(ctx, () => fn.call(thisArg, ...args));
  }
  bind<T>(ctx: Context, target: T): T {
    if (typeof target !== 'function') return target;
    const fn = target as unknown as (...a: unknown[]) => unknown;
    return ((...a: unknown[]) => this.with(ctx, () => fn(...a))) as unknown as T;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    this.storage.disable();
    return this;
  }
}

let registered = false;
export function registerContextManager(): void {
  if (registered) return;
  context.setGlobalContextManager(new AlsContextManager().enable());
  registered = true;
}

/** A sampled local span context, for tests that enqueue "under a span". */
export const TEST_SPAN = {
  traceId: '0af7651916cd43dd8448eb211c80319c',
  spanId: 'b7ad6b7169203331',
  traceFlags: TraceFlags.SAMPLED,
  isRemote: false,
};

/** Runs `fn` with `TEST_SPAN` active (needs `registerContextManager()`). */
export function underSpan<T>(fn: () => Promise<T>): Promise<T> {
  return context.with(trace.setSpanContext(context.active(), TEST_SPAN), fn);
}
