/**
 * The session loop's refusals, one class each; the API maps them onto HTTP in one place
 * (src/api/errors.ts): not found → 404, refused → 400, not the caller's to send → 403.
 */

export class LoopError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** No such session, or not one the caller may see (another environment's). */
export class SessionNotFoundError extends LoopError {
  constructor(readonly sessionId: string) {
    super(`session ${sessionId} not found`);
  }
}

/** The event cannot be taken as sent: an unknown call, a conflicting answer, a closed session. */
export class EventRefusedError extends LoopError {}

/** The caller's credential may not post this kind of event (an environment key posting a message). */
export class EventForbiddenError extends LoopError {}
