/**
 * The journal's own publish path on a real server: each publish gets its own answer whatever
 * order the answers come in, a refusal and a missing stream are told apart, a publish nobody
 * answers times out on the clock it was given (one timer per connection, set for the earliest
 * deadline), and a drop fails exactly the publishes still waiting.
 */
import { JetStreamApiError, jetstreamManager, type PubAck } from '@nats-io/jetstream';
import { headers, type NatsConnection, TimeoutError } from '@nats-io/nats-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { NoResponderError, publishForAck } from '../../src/journal/acks.js';
import { LinkDownError } from '../../src/journal/link.js';
import { JOURNAL_STREAM, journalSubject } from '../../src/journal/types.js';
import { provisionJournal, uniqueRun } from '../helpers/journal.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { useNatsServer } from '../helpers/nats.js';

const utf8 = new TextEncoder();

function fenced(expected: number, id?: string) {
  const h = headers();
  h.set('Nats-Expected-Last-Subject-Sequence', String(expected));
  if (id) h.set('Nats-Msg-Id', id);
  return h;
}

/** A subject a plain subscriber holds and never answers: a publish there waits for nothing. */
function silentSubject(nc: NatsConnection): string {
  const subject = `silent.${uniqueRun()}`;
  nc.subscribe(subject, { callback: () => {} });
  return subject;
}

describe('the journal publish path', () => {
  const nats = useNatsServer();
  beforeAll(() => provisionJournal(nats));

  it('concurrent publishes each get their own PubAck, and an identical resend is answered as a duplicate of it', async () => {
    const nc = await nats.connect();
    const subjects = Array.from({ length: 40 }, () => journalSubject(uniqueRun(), 'agent'));
    const acks = await Promise.all(
      subjects.map((s, i) => publishForAck(nc, s, utf8.encode(`{"n":${i}}`), fenced(0, `${s}.0`), 2_000)),
    );
    expect(new Set(acks.map((a) => a.seq)).size).toBe(40);
    for (const a of acks) expect(a).toMatchObject({ stream: JOURNAL_STREAM, duplicate: false });
    // Each sequence stores the body its publish sent.
    const jsm = await jetstreamManager(nc);
    for (const [i, a] of acks.entries()) {
      const stored = await jsm.streams.getMessage(JOURNAL_STREAM, { seq: a.seq });
      expect(stored?.subject).toBe(subjects[i]);
      expect(stored?.string()).toBe(`{"n":${i}}`);
    }
    const again = await publishForAck(
      nc,
      subjects[7]!,
      utf8.encode('{"n":7}'),
      fenced(0, `${subjects[7]}.0`),
      2_000,
    );
    expect(again).toEqual({ ...acks[7]!, duplicate: true } satisfies PubAck);
  });

  it("the server's refusal is a JetStreamApiError with its code; a subject no stream takes is NoResponderError", async () => {
    const nc = await nats.connect();
    const subject = journalSubject(uniqueRun(), 'agent');
    await publishForAck(nc, subject, utf8.encode('{}'), fenced(0), 2_000);
    const refused = await publishForAck(nc, subject, utf8.encode('{}'), fenced(0), 2_000).catch((e) => e);
    expect(refused).toBeInstanceOf(JetStreamApiError);
    expect((refused as JetStreamApiError).code).toBe(10071);
    const nobody = await publishForAck(
      nc,
      `nowhere.${uniqueRun()}`,
      utf8.encode('{}'),
      fenced(0),
      2_000,
    ).catch((e) => e);
    expect(nobody).toBeInstanceOf(NoResponderError);
  });

  it('an unanswered publish times out at its own deadline, a shorter one set later first, and an answered one never', async () => {
    const nc = await nats.connect();
    const clock = new ManualClock();
    const silent = silentSubject(nc);
    const outcome = (p: Promise<PubAck>) =>
      p.then(
        (ack) => ack,
        (err: unknown) => err,
      );
    // The first publish on this connection makes its inbox, on the manual clock.
    const answered = outcome(
      publishForAck(nc, journalSubject(uniqueRun(), 'agent'), utf8.encode('{}'), fenced(0), 300, clock),
    );
    const long = outcome(publishForAck(nc, silent, utf8.encode('{}'), fenced(0), 1_000, clock));
    const short = outcome(publishForAck(nc, silent, utf8.encode('{}'), fenced(0), 200, clock));
    expect(await answered).toMatchObject({ stream: JOURNAL_STREAM });

    let longDone = false;
    void long.then(() => {
      longDone = true;
    });
    await clock.advance(199);
    let shortDone = false;
    void short.then(() => {
      shortDone = true;
    });
    await clock.settle();
    expect(shortDone).toBe(false);
    await clock.advance(1);
    expect(await short).toBeInstanceOf(TimeoutError);
    expect(longDone).toBe(false);
    await clock.advance(799);
    expect(longDone).toBe(false);
    await clock.advance(1);
    expect(await long).toBeInstanceOf(TimeoutError);
    // Nothing waits: the inbox leaves no timer behind.
    expect(clock.pendingTimers).toBe(0);
  });

  it('a drop fails every publish still waiting with LinkDownError, and none answered before it', async () => {
    const nc = await nats.connect();
    const silent = silentSubject(nc);
    const answered = await publishForAck(
      nc,
      journalSubject(uniqueRun(), 'agent'),
      utf8.encode('{}'),
      fenced(0),
      5_000,
    );
    const waiting = Array.from({ length: 5 }, () =>
      publishForAck(nc, silent, utf8.encode('{}'), fenced(0), 5_000).catch((e: unknown) => e),
    );
    await nc.close();
    for (const w of waiting) expect(await w).toBeInstanceOf(LinkDownError);
    expect(answered.duplicate).toBe(false);
  });
});
