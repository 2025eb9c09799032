/**
 * The agents' outcomes that are not success, one class each. The API layer maps them onto
 * HTTP in one place (`src/api/errors.ts`); nothing here knows about HTTP.
 */

/** Base class, so a caller can tell an agent outcome from a driver or programming error. */
export class AgentError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** The agent is archived: it can no longer change, and no new session may run it. */
export class AgentArchivedError extends AgentError {
  constructor(readonly agentId: string) {
    super(`agent ${agentId} is archived`);
  }
}

/**
 * An update named the version it was made from (`version`), and the agent has moved on since:
 * applying it would overwrite a change its sender never saw.
 */
export class AgentVersionConflictError extends AgentError {
  constructor(
    readonly agentId: string,
    readonly expected: number,
    readonly current: number,
  ) {
    super(
      `agent ${agentId} is at version ${current}, not ${expected}: retrieve it and apply the update again`,
    );
  }
}

/**
 * A definition Leasehold cannot store or run: `field` is where it goes wrong, as a dotted path
 * into the request body (`tools.2.name`), so the caller can find it.
 */
export class AgentDefinitionError extends AgentError {
  constructor(
    readonly field: string,
    problem: string,
  ) {
    super(`${field}: ${problem}`);
  }
}
