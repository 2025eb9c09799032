/**
 * The configuration as the options of the journal stream and of housekeeping: one mapping for
 * every entry point, so the server, the brain, the provisioning script and the Worker's cron
 * read the same settings the same way.
 */
import type { Config } from '../src/config.js';
import type { JournalStreamOptions } from '../src/journal/stream.js';
import type { HousekeepingOptions } from '../src/queue/drain.js';

/** Limits left unset stay undefined: an existing stream then keeps the ones it has. */
export function journalStreamOptions(config: Config): JournalStreamOptions {
  return {
    replicas: config.journalReplicas,
    ...(config.journalMaxAgeMs === null ? {} : { maxAgeMs: config.journalMaxAgeMs }),
    ...(config.journalMaxBytes === null ? {} : { maxBytes: config.journalMaxBytes }),
  };
}

export function housekeepingOptions(config: Config): HousekeepingOptions {
  return {
    retainStoppedWorkMs: config.retainStoppedWorkMs,
    retainArchivedSessionsMs: config.retainArchivedSessionsMs,
    retainEmptyPlatformSessionsMs: config.retainEmptyPlatformSessionsMs,
  };
}
