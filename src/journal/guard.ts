/**
 * One owner per journal handle. Model and tool calls are matched by position, so calls issued
 * concurrently would replay in another order on the next delivery: a second call while one is
 * pending is refused (`ConcurrentUseError`; Go panics). A running tool function is the one
 * exception: it may append `entry` records, one at a time (its progress, which becomes the
 * `partial` of the call should it be interrupted).
 *
 * JavaScript cannot tell who calls, so "from inside the tool" means "while the tool runs": an
 * entry appended then belongs to that tool's progress, which is what it means anyway.
 */
import { ConcurrentUseError } from './errors.js';

export class OwnerGuard {
  #busy: 'idle' | 'call' | 'tool-fn' = 'idle';
  #entryInTool = false;

  /** Takes the handle for one call and returns its release; throws when it is taken. */
  enter(isEntry: boolean): () => void {
    if (this.#busy === 'idle') {
      this.#busy = 'call';
      return () => {
        this.#busy = 'idle';
      };
    }
    if (this.#busy === 'tool-fn' && isEntry && !this.#entryInTool) {
      this.#entryInTool = true;
      return () => {
        this.#entryInTool = false;
      };
    }
    throw new ConcurrentUseError();
  }

  /** Runs a tool function inside the call that holds the handle, opening it to entries. */
  async whileToolRuns<T>(run: () => Promise<T>): Promise<T> {
    this.#busy = 'tool-fn';
    try {
      return await run();
    } finally {
      this.#busy = 'call';
    }
  }
}
