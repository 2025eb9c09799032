/**
 * The wire's error envelope and the one place where failures become HTTP statuses:
 * `{"type":"error","request_id":"req_…","error":{"type":…,"message":…,"details"?:…}}`.
 * Queue and agent outcomes map to 400/404/409/412; a missing journal stream, an unreachable
 * database or NATS to 503; a journal record that is not JSON to 502; anything unknown is
 * logged with the request id and answered with a generic 500 that reveals nothing.
 */
import { AgentArchivedError, AgentDefinitionError, AgentVersionConflictError } from '../agents/index.js';
import { isDatabaseUnavailable } from '../db/errors.js';
import { CorruptRecordError, JournalUnavailableError, NotProvisionedError } from '../journal/index.js';
import { EventForbiddenError, EventRefusedError, SessionNotFoundError } from '../loop/index.js';
import {
  HeartbeatMismatchError,
  LeaseLostError,
  MetadataLimitError,
  UnknownSessionError,
  WorkConflictError,
  WorkNotFoundError,
} from '../queue/index.js';

export type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'request_too_large'
  | 'lease_lost_error'
  | 'rate_limit_error'
  | 'overloaded_error'
  | 'api_error';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly type: ErrorType,
    message: string,
    readonly options: { details?: Record<string, unknown>; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export const badRequest = (message: string) => new ApiError(400, 'invalid_request_error', message);
export const unauthorized = (message: string) => new ApiError(401, 'authentication_error', message);
export const forbidden = (message: string) => new ApiError(403, 'permission_error', message);
export const notFound = (message: string) => new ApiError(404, 'not_found_error', message);
/** A dependency the server lacks (not configured, or not provisioned): the operator's to fix. */
export const serviceUnavailable = (message: string) => new ApiError(503, 'api_error', message);
/**
 * Over a documented cap (concurrent long polls, request rate): 429 with `retry-after` in
 * seconds, which the SDK honours before it retries.
 */
export const tooManyRequests = (message: string, retryAfterSeconds: number) =>
  new ApiError(429, 'rate_limit_error', message, { headers: { 'retry-after': String(retryAfterSeconds) } });
/**
 * A dependency that is there but not answering right now (the database restarting, the pool
 * exhausted): 503 with `retry-after`, so clients back off and retry instead of hanging.
 */
export const temporarilyUnavailable = (message: string, retryAfterSeconds = 1) =>
  new ApiError(503, 'overloaded_error', message, { headers: { 'retry-after': String(retryAfterSeconds) } });
/** A semantic conflict: retrying cannot help, so the SDK is told not to (it retries 409s by default). */
export const conflict = (message: string, type: ErrorType = 'invalid_request_error') =>
  new ApiError(409, type, message, { headers: { 'x-should-retry': 'false' } });

/** The HTTP form of a failure; null for failures that are not the client's (→ 500). */
export function toApiError(err: unknown): ApiError | null {
  if (err instanceof ApiError) return err;
  if (err instanceof WorkNotFoundError) return notFound('work item not found');
  if (err instanceof WorkConflictError) return conflict('work item is already stopping or stopped');
  if (err instanceof LeaseLostError)
    return conflict('the lease is no longer held by this proof', 'lease_lost_error');
  if (err instanceof UnknownSessionError) return badRequest(err.message);
  if (err instanceof MetadataLimitError) return badRequest(`metadata: ${err.message}`);
  if (err instanceof HeartbeatMismatchError) return preconditionFailed(err, 0);
  // Agents: a definition that cannot run names its field; an archived agent is read-only and
  // closed to new sessions; a stale `version` would overwrite a change its sender never saw.
  if (err instanceof AgentDefinitionError) return badRequest(err.message);
  if (err instanceof AgentArchivedError)
    return badRequest(`${err.message}: it can no longer be updated or used by new sessions`);
  if (err instanceof AgentVersionConflictError) return conflict(err.message);
  // Sessions: another environment's session looks missing; an event the loop cannot take is
  // the sender's to fix; an event type an environment key may not send is not its to send.
  if (err instanceof SessionNotFoundError) return notFound('session not found');
  if (err instanceof EventRefusedError) return badRequest(err.message);
  if (err instanceof EventForbiddenError) return forbidden(err.message);
  if (err instanceof NotProvisionedError) return serviceUnavailable('journal stream not provisioned');
  // NATS dropped or not answering: the client reconnects on its own within about 2 s.
  if (err instanceof JournalUnavailableError)
    return temporarilyUnavailable('the journal is unavailable: NATS is not reachable right now', 2);
  // Not the caller's fault and not ours to hide: the record that cannot be read is named.
  if (err instanceof CorruptRecordError) return new ApiError(502, 'api_error', err.message);
  // The database restarting, unreachable or out of pooled connections: nothing was decided,
  // so the client is told to retry (the SDK retries a 503 after `retry-after`).
  if (isDatabaseUnavailable(err)) return temporarilyUnavailable('the database is unavailable; retry shortly');
  return null;
}

/**
 * A heartbeat's 412, shaped so the SDK raises `BetaHeartbeatPreconditionFailedError` and its
 * worker can read the server's view of the lease at `error.details.current_state`.
 */
export function preconditionFailed(err: HeartbeatMismatchError, ttlSeconds: number): ApiError {
  return new ApiError(412, 'invalid_request_error', err.message, {
    details: {
      error_code: 'heartbeat_precondition_failed',
      current_state: {
        state: err.current?.state ?? null,
        last_heartbeat: err.current?.lastHeartbeat ?? null,
        lease_extended: false,
        ttl_seconds: ttlSeconds,
      },
    },
  });
}

export function errorBody(requestId: string, err: ApiError): Record<string, unknown> {
  const error: Record<string, unknown> = { type: err.type, message: err.message };
  if (err.options.details) error.details = err.options.details;
  return { type: 'error', request_id: requestId, error };
}

export const internalError = () => new ApiError(500, 'api_error', 'internal server error');
