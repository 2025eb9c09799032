/**
 * The JSON rules of the journal. Record bodies embed tool inputs, tool outputs and model
 * responses as JSON values (Go's `json.RawMessage`), so anything else must be refused before it
 * is written: `JSON.stringify` would silently turn `NaN` into `null`, a `Map` into `{}` and drop
 * a function, and the recorded call would no longer be the call that ran.
 */
import type { Json } from './types.js';

/** Throws a TypeError (a programmer error) unless `value` is a plain JSON value. */
export function assertJson(value: unknown, what: string): asserts value is Json {
  const problem = jsonProblem(value, []);
  if (problem) throw new TypeError(`${what} is not a JSON value: ${problem}`);
}

/**
 * `open` holds the objects being walked (the path from the root), so a value met again on its
 * own path is a cycle while one shared by two branches is not. An array, not a Set: every append
 * walks its body, bodies nest a few levels deep, and a Set would hash each object it meets.
 */
function jsonProblem(value: unknown, open: object[]): string | null {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return null;
  if (typeof value === 'number') return Number.isFinite(value) ? null : `${value} has no JSON form`;
  if (typeof value !== 'object') return `a ${typeof value}`;
  if (open.includes(value)) return 'a cycle';
  open.push(value);
  try {
    if (Array.isArray(value)) {
      for (const item of value) {
        // JSON.stringify writes `null` for a hole or undefined item: refuse rather than rewrite.
        if (item === undefined) return 'undefined in an array';
        const p = jsonProblem(item, open);
        if (p) return p;
      }
      return null;
    }
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) {
      return `a ${(value as object).constructor?.name ?? 'non-plain'} object`;
    }
    for (const item of Object.values(value)) {
      // An undefined property is left out by JSON.stringify, as an optional field should be.
      if (item === undefined) continue;
      const p = jsonProblem(item, open);
      if (p) return p;
    }
    return null;
  } finally {
    open.pop();
  }
}

/**
 * Keys sorted, no whitespace: the form two writers (Go or TypeScript) agree on, so a recorded
 * tool input matches a replayed one whatever key order or spacing either used. Absent is ''.
 */
export function canonicalJson(value: Json | undefined): string {
  if (value === undefined) return '';
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: Json): Json {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  const out: { [key: string]: Json } = {};
  for (const key of Object.keys(value).sort()) {
    const item = value[key];
    if (item !== undefined) out[key] = sortKeys(item);
  }
  return out;
}
