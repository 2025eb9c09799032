/**
 * The session loop: what appending to a session's event log sets off, in the transaction of
 * the append. A user message enqueues the brain's `model_turn`; the brain's tool calls
 * enqueue the environment's `tool_exec`; the answer to the last call enqueues the next turn;
 * an interrupt stops the session's work. See post-events.ts, turn.ts and rearm.ts.
 */

export { enqueueTurn, TURN_CHANNEL } from './enqueue-turn.js';
export { EventForbiddenError, EventRefusedError, LoopError, SessionNotFoundError } from './errors.js';
export { openSession } from './open-session.js';
export {
  applyAll,
  type ClientEvent,
  idle,
  type Poster,
  postEvents,
  WORKER_EVENT_TYPES,
} from './post-events.js';
export { MAX_REARMS, type RearmOutcome, rearm, rearmFor } from './rearm.js';
export {
  agentEvents,
  type ResponseBlock,
  settleTurn,
  startTurn,
  type ToolJudge,
  type TurnResult,
} from './turn.js';
