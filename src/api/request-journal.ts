/**
 * The journal for a host whose connections cannot outlive the request that opened them
 * (Workers): one websocket NATS connection per request, opened by the first journal read the
 * request makes — a request that reads no journal (a queue poll) pays no handshake — shared by
 * every later read of the same request (a console step page reads twice, through the
 * in-process API, which hands the same deps on), and closed by the host once the response is
 * done with it.
 *
 * Reconnecting is off: a connection lives for one request, and one that drops fails that
 * request's reads at once (503) instead of waiting for a server that may not come back in time.
 * The stream is not provisioned here: that is a deploy step (`npm run journal:provision`), and
 * a missing stream answers the documented 503.
 */
import { jetstream } from '@nats-io/jetstream';
import { connectJournal, type JournalConnectOptions } from '../journal/index.js';
import type { JournalDeps } from './types.js';

export interface RequestJournal {
  /** What `ApiDeps.journal` is set to: connects on the first call; later calls share it. */
  readonly journal: () => Promise<JournalDeps>;
  /** Closes the connection if the request opened one (waiting for it if still connecting); never rejects. */
  close(): Promise<void>;
}

export function requestJournal(
  url: string,
  options: Omit<JournalConnectOptions, 'reconnect'> = {},
): RequestJournal {
  let opening: Promise<JournalDeps> | null = null;
  return {
    journal: () => {
      opening ??= connectJournal(url, { ...options, reconnect: false }).then((nc) => ({
        nc,
        js: jetstream(nc),
      }));
      return opening;
    },
    close: async () => {
      if (!opening) return;
      // A connect that failed left nothing open (connectJournal closes a late one itself).
      const deps = await opening.catch(() => null);
      await deps?.nc.close().catch(() => {});
    },
  };
}
