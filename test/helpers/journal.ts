/**
 * Fixtures for the journal-handle tests: tasks with defaults, a connection with the stream
 * provisioned, records published by hand (to plant what a crashed or foreign writer left), a
 * tool that counts its runs, and a promise a test settles when it chooses.
 */
import { type JetStreamClient, jetstream, jetstreamManager, type PubAck } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { encodeBody, recordHeaders } from '../../src/journal/codec.js';
import { JournalUnavailableError } from '../../src/journal/errors.js';
import { read } from '../../src/journal/read.js';
import { ensureJournalStream, type JournalStreamOptions } from '../../src/journal/stream.js';
import type { ToolFn } from '../../src/journal/tool.js';
import {
  type BodyOf,
  JOURNAL_STREAM,
  type Json,
  journalSubject,
  msgId,
  type RecordType,
  type Task,
} from '../../src/journal/types.js';
import type { NatsServer } from './nats.js';

export const STEP = 'agent';

let runs = 0;
/** A run id no other test in the file uses. */
export function uniqueRun(prefix = 'run'): string {
  runs += 1;
  return `${prefix}${runs}`;
}

/** A task with defaults: step `agent`, iteration 0, attempt 1, first delivery of task message 10. */
export function taskOf(runId: string, overrides: Partial<Task> = {}): Task {
  return { runId, stepId: STEP, iteration: 0, attempt: 1, delivered: 1, streamSeq: 10, ...overrides };
}

export async function connectJs(nats: NatsServer): Promise<{ nc: NatsConnection; js: JetStreamClient }> {
  const nc = await nats.connect();
  return { nc, js: jetstream(nc) };
}

/** Creates AGENT_JOURNAL afresh (deleting one left by an earlier test of the file). */
export async function provisionJournal(nats: NatsServer, options: JournalStreamOptions = {}): Promise<void> {
  const jsm = await jetstreamManager(await nats.connect());
  await jsm.streams.delete(JOURNAL_STREAM).catch(() => {});
  await ensureJournalStream(jsm, options);
}

/**
 * Publishes one record exactly as the writer would (headers, body, msg id), with `expected` as
 * the fence (null: unfenced). Plants records of writers that are not under test.
 */
export function rawPublish<T extends RecordType>(
  js: JetStreamClient,
  task: Task,
  type: T,
  body: BodyOf<T> | Uint8Array,
  index: number,
  expected: number | null,
): Promise<PubAck> {
  return js.publish(
    journalSubject(task.runId, task.stepId),
    body instanceof Uint8Array ? body : encodeBody(type, body),
    {
      headers: recordHeaders(type, task, index),
      msgID: msgId(task, index),
      ...(expected === null ? {} : { expect: { lastSubjectSequence: expected } }),
    },
  );
}

export async function recordTypes(js: JetStreamClient, runId: string): Promise<string[]> {
  return (await read(js, runId, STEP)).map((r) => r.type);
}

export async function recordCount(js: JetStreamClient, runId: string): Promise<number> {
  return (await read(js, runId, STEP)).length;
}

/** A tool that returns `output` (or runs `body`) and counts how often it ran. */
export function countingTool(output: Json = { ok: true }, body?: ToolFn): { fn: ToolFn; runs: () => number } {
  let count = 0;
  return {
    fn: async (call) => {
      count += 1;
      return body ? body(call) : output;
    },
    runs: () => count,
  };
}

export interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** Resolves on the connection's next status event of `type`. */
export async function nextStatus(nc: NatsConnection, type: string): Promise<void> {
  for await (const s of nc.status()) if (s.type === type) return;
}

/**
 * Retries `op` while it fails with JournalUnavailableError (the server away), for at most
 * `boundMs`; how long until it worked.
 */
export async function untilJournalWorks(op: () => Promise<unknown>, boundMs: number): Promise<number> {
  const started = performance.now();
  for (;;) {
    try {
      await op();
      return performance.now() - started;
    } catch (err) {
      if (!(err instanceof JournalUnavailableError) || performance.now() - started > boundMs) throw err;
      await new Promise((r) => setTimeout(r, 25));
    }
  }
}
