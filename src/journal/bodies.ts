/**
 * The shape of each record body, checked once on each side: the codec checks what it reads (a
 * body of the wrong shape is a `CorruptRecordError` naming the record) and what it is asked to
 * write (a `TypeError`, the caller's mistake, refused before it could make the step unreadable).
 * So the readers take a record's body for what its type says without looking again.
 *
 * The rules are what the Go structs' encoder writes: required fields present with their JSON
 * type, whole numbers where Go has integers, optional fields absent or of their type, `replay`
 * and a commit's `action` from their sets. Fields that hold the caller's JSON (`input`,
 * `output`, `partial`, `content`, `wait`) may hold any JSON value, and fields a newer writer
 * adds are kept.
 */
import { fromBase64 } from '../base64.js';
import type {
  ClaimBody,
  Commit,
  InputPlacedBody,
  ModelResponseBody,
  PauseBody,
  RecordType,
  ToolIntentBody,
  ToolResultBody,
} from './types.js';

/** Why a body is not of its type's shape: `detail` completes "its tool.result body …". */
export class BodyShapeError extends Error {
  constructor(readonly detail: string) {
    super(`body ${detail}`);
    this.name = 'BodyShapeError';
  }
}

type Fields = { readonly [key: string]: unknown };
type Rule = { test: (value: unknown) => boolean; what: string };

const WHOLE: Rule = { test: (v) => typeof v === 'number' && Number.isInteger(v), what: 'a whole number' };
const TEXT: Rule = { test: (v) => typeof v === 'string', what: 'a string' };
const FLAG: Rule = { test: (v) => typeof v === 'boolean', what: 'true or false' };
const REPLAY = oneOf('safe', 'unsafe');
const ACTION = oneOf('continue', 'complete', 'fail');

function oneOf(...values: string[]): Rule {
  return {
    test: (v) => typeof v === 'string' && values.includes(v),
    what: values
      .map((v) => JSON.stringify(v))
      .join(', ')
      .replace(/, ([^,]*)$/, ' or $1'),
  };
}

/** The value as a finding quotes it: its JSON, cut short. */
function found(value: unknown): string {
  if (value === undefined) return 'none';
  if (value instanceof Uint8Array) return 'bytes';
  const json = JSON.stringify(value) ?? typeof value;
  return json.length > 40 ? `${json.slice(0, 39)}…` : json;
}

function isObject(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function object(value: unknown): Fields {
  if (!isObject(value)) throw new BodyShapeError(`needs to be a JSON object (found ${found(value)})`);
  return value;
}

function need(o: Fields, key: string, rule: Rule): void {
  if (!rule.test(o[key]))
    throw new BodyShapeError(`needs "${key}" to be ${rule.what} (found ${found(o[key])})`);
}

/** An optional field: absent (or undefined, which JSON leaves out) or of its rule. */
function may(o: Fields, key: string, rule: Rule): void {
  if (o[key] !== undefined) need(o, key, rule);
}

export function assertClaimBody(value: unknown): asserts value is ClaimBody {
  const o = object(value);
  need(o, 'iteration', WHOLE);
  need(o, 'attempt', WHOLE);
  need(o, 'delivered', WHOLE);
  may(o, 'dispatch_nonce', TEXT);
  may(o, 'stream_seq', WHOLE);
}

export function assertModelResponseBody(value: unknown): asserts value is ModelResponseBody {
  need(object(value), 'call', WHOLE);
}

export function assertToolIntentBody(value: unknown): asserts value is ToolIntentBody {
  const o = object(value);
  need(o, 'name', TEXT);
  need(o, 'call', WHOLE);
  need(o, 'key', TEXT);
  need(o, 'replay', REPLAY);
}

export function assertToolResultBody(value: unknown): asserts value is ToolResultBody {
  const o = object(value);
  need(o, 'call', WHOLE);
  need(o, 'key', TEXT);
  may(o, 'error', TEXT);
  may(o, 'interrupted', FLAG);
}

export function assertPauseBody(value: unknown): asserts value is PauseBody {
  const o = object(value);
  need(o, 'name', TEXT);
  need(o, 'duration_ms', WHOLE);
}

export function assertInputPlacedBody(value: unknown): asserts value is InputPlacedBody {
  const o = object(value);
  need(o, 'request_id', TEXT);
  need(o, 'mode', TEXT);
}

/** A commit as stored: its `state` is base64 text (Go's `[]byte`); null is Go's nil. */
type StoredCommit = Omit<Commit, 'state'> & { state?: string | null };

function commitFields(o: Fields): void {
  need(o, 'action', ACTION);
  may(o, 'error', TEXT);
  may(o, 'failure_type', TEXT);
  may(o, 'retry_after_ms', WHOLE);
}

function assertStoredCommit(value: unknown): asserts value is StoredCommit {
  const o = object(value);
  commitFields(o);
  if (o.state !== null) may(o, 'state', { test: TEXT.test, what: 'base64 text' });
}

/** The commit a stored body holds, its state decoded from base64 (in its place: same key order). */
export function commitFromStored(value: unknown): Commit {
  assertStoredCommit(value);
  const { state, ...rest } = value;
  if (state === undefined || state === null) return rest;
  let bytes: Uint8Array;
  try {
    bytes = fromBase64(state);
  } catch {
    throw new BodyShapeError(`needs "state" to be base64 text (found ${found(state)})`);
  }
  return { ...value, state: bytes };
}

function assertCommit(value: unknown): asserts value is Commit {
  const o = object(value);
  commitFields(o);
  may(o, 'state', { test: (v) => v instanceof Uint8Array, what: 'bytes (a Uint8Array)' });
}

/** The check a body of each type must pass before it is written. */
export const BODY_CHECKS: { readonly [T in RecordType]: (value: unknown) => void } = {
  claim: assertClaimBody,
  // An entry is the handler's own JSON: any value (assertJson refuses what is not JSON).
  entry: () => {},
  'model.response': assertModelResponseBody,
  'tool.intent': assertToolIntentBody,
  'tool.result': assertToolResultBody,
  pause: assertPauseBody,
  'input.placed': assertInputPlacedBody,
  commit: assertCommit,
};
