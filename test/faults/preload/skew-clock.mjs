/**
 * An injected clock for a whole Node process (`NODE_OPTIONS=--import …/skew-clock.mjs`): the
 * wall clock the process's code reads — `Date.now()`, `new Date()`, `Date()` — runs
 * `TEST_CLOCK_SKEW_MS` ahead (or behind, when negative) of the machine's. Monotonic time
 * (`performance.now()`) is left alone: skew is a property of wall clocks.
 *
 * So a test can see the skew took hold in the process that serves, every HTTP response of
 * the process carries `x-test-process-clock`: the process's own `new Date()`, read while
 * answering. (Node's `date` header cannot tell: it reads an unpatched Date.)
 */
import http from 'node:http';

const skew = Number(process.env.TEST_CLOCK_SKEW_MS);
if (!Number.isFinite(skew)) throw new Error('skew-clock: TEST_CLOCK_SKEW_MS must be a number of ms');

const RealDate = globalThis.Date;
const skewedNow = () => RealDate.now() + skew;
globalThis.Date = new Proxy(RealDate, {
  construct(target, args, newTarget) {
    return args.length === 0
      ? Reflect.construct(target, [skewedNow()], newTarget)
      : Reflect.construct(target, args, newTarget);
  },
  apply() {
    return new RealDate(skewedNow()).toString();
  },
  get(target, prop, receiver) {
    return prop === 'now' ? skewedNow : Reflect.get(target, prop, receiver);
  },
});

const emit = http.Server.prototype.emit;
http.Server.prototype.emit = function emitWithClock(event, ...args) {
  if (event === 'request') args[1].setHeader('x-test-process-clock', new Date().toISOString());
  return emit.call(this, event, ...args);
};
