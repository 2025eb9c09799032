import type { EnvironmentSummary } from '../queue/index.js';
import { duration } from './html.js';

/**
 * An environment's figures as the console shows them, the page and the live refresh alike: the
 * server formats the oldest item's age, so the script only swaps text and no formatting is
 * written twice.
 */
export type Figures = EnvironmentSummary & { oldestQueuedAge: string };

export const figures = (s: EnvironmentSummary): Figures => ({
  ...s,
  oldestQueuedAge: duration(s.oldestQueuedMs),
});
