import { withSpan } from '../telemetry/tracing.js';

export interface HousekeepingOptions {
  /** Rows per statement. */
  batch?: number;
  /** Statements per run at most, so one run is bounded however large the backlog. */
  maxBatches?: number;
  /** Delete work items stopped longer ago than this (ms); 0 keeps them. Default: 7 days. */
  retainStoppedWorkMs?: number;
  /** Delete API sessions archived longer ago than this (ms); 0, the default, keeps them. */
  retainArchivedSessionsMs?: number;
  /**
   * Delete platform-lane sessions this long (ms) after the stopped-work retention deleted the
   * last of their items; 0, the default, keeps them.
   */
  retainEmptyPlatformSessionsMs?: number;
}

const DEFAULT_MAX_BATCHES = 20;

/**
 * Runs `step` — one statement — until it says there is no more or `maxBatches` ran, in a span
 * `name` counting the rows; returns that count.
 */
export function drain(
  name: string,
  options: HousekeepingOptions,
  step: () => Promise<{ rows: number; more: boolean }>,
): Promise<number> {
  const maxBatches = options.maxBatches ?? DEFAULT_MAX_BATCHES;
  return withSpan(name, {}, async (span) => {
    let total = 0;
    for (let i = 0; i < maxBatches; i++) {
      const { rows, more } = await step();
      total += rows;
      if (!more) break;
    }
    span.setAttribute('queue.rows', total);
    return total;
  });
}
