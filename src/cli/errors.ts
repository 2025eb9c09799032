/**
 * The CLI's failures, each a class with its exit code, so `run.ts` turns any of them into one
 * line on stderr (`leasehold: <reason>`) and a code a script can branch on:
 *
 * - 1 `RequestError`: the API answered with an error (its status, type and message), or a
 *   local operation (migrate, provision) failed;
 * - 2 `UsageError`: the command line is wrong (unknown command or option, missing argument);
 * - 3 `UnreachableError`: nothing answered at the URL (connection refused, DNS, timeout).
 */

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;
export const EXIT_UNREACHABLE = 3;

export class UsageError extends Error {
  readonly exitCode = EXIT_USAGE;
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** An error answer from the API, in its envelope's terms. */
export class RequestError extends Error {
  readonly exitCode = EXIT_FAILED;
  constructor(
    readonly status: number,
    readonly type: string,
    detail: string,
  ) {
    super(`${status} ${type}: ${detail}`);
    this.name = 'RequestError';
  }
}

export class UnreachableError extends Error {
  readonly exitCode = EXIT_UNREACHABLE;
  constructor(url: string, options: { cause: unknown }) {
    super(`cannot reach ${url}: ${reasonOf(options.cause)}`, options);
    this.name = 'UnreachableError';
  }
}

/** A finding that is not a failed request (a journal check with violations). */
export class FindingError extends Error {
  readonly exitCode = EXIT_FAILED;
  constructor(message: string) {
    super(message);
    this.name = 'FindingError';
  }
}

/** The one line and the exit code for anything a command threw. */
export function describeFailure(err: unknown): { line: string; exitCode: number } {
  const exitCode =
    err instanceof UsageError ||
    err instanceof RequestError ||
    err instanceof UnreachableError ||
    err instanceof FindingError
      ? err.exitCode
      : EXIT_FAILED;
  // One line, always: a multi-line message (a driver's) keeps its first line only.
  const line = reasonOf(err).split('\n')[0]!.trim();
  return { line: `leasehold: ${line}`, exitCode };
}

/** The most specific reason: fetch hides the socket error (ECONNREFUSED…) in `cause`. */
function reasonOf(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  // A connection to every address of a host failed (pg, net): the first one says why.
  if (err instanceof AggregateError && !err.message && err.errors.length) return reasonOf(err.errors[0]);
  const cause = err.cause as { code?: unknown; message?: unknown } | undefined;
  if (err.name === 'TypeError' && cause) {
    if (typeof cause.code === 'string') return cause.code;
    if (cause instanceof Error) return reasonOf(cause);
  }
  if (err.name === 'TimeoutError') return 'timed out';
  return err.message || err.name;
}
