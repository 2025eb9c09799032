/**
 * A fake model for tests: it answers `journal.model(m.respond)` with scripted responses in
 * order and counts the requests it served, so a test can tell a response the journal replayed
 * (the count is unchanged) from one it requested again (the count went up).
 */
import type { Json } from './types.js';

export class ScriptedModel {
  readonly #responses: Json[];
  #served = 0;

  constructor(...responses: Json[]) {
    this.#responses = responses;
  }

  /** The next scripted response; rejects once the script is exhausted. Pass it as a ModelFn. */
  readonly respond = async (): Promise<Json> => {
    if (this.#served >= this.#responses.length) {
      throw new Error(`scripted model: no response left (served ${this.#served})`);
    }
    return this.#responses[this.#served++]!;
  };

  /** How many responses have been served. */
  requests(): number {
    return this.#served;
  }
}
