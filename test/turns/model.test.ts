import type { BetaManagedAgentsSessionErrorEvent } from '@anthropic-ai/sdk/resources/beta/sessions/events';
import { describe, expect, it } from 'vitest';
import { ModelError, type RetryStatus, sessionErrorOf } from '../../src/turns/model.js';

/** The SDK's type for the `error` of a session.error: what sessionErrorOf must produce. */
type SdkSessionError = BetaManagedAgentsSessionErrorEvent['error'];

describe('sessionErrorOf', () => {
  const cases: Array<[ModelError, SdkSessionError['type']]> = [
    [new ModelError('overloaded', 'Overloaded', { status: 529 }), 'model_overloaded_error'],
    [new ModelError('rate_limited', 'Slow down', { status: 429 }), 'model_rate_limited_error'],
    [new ModelError('request_failed', 'Bad request', { status: 400 }), 'model_request_failed_error'],
    [new ModelError('request_failed', 'No answer'), 'model_request_failed_error'],
    [new ModelError('script_exhausted', 'No response left'), 'unknown_error'],
  ];

  it.each(cases)('a %s failure becomes a %s the turn will not retry (exhausted)', (err, type) => {
    const object: SdkSessionError = sessionErrorOf(err);
    expect(object).toEqual({ type, message: err.message, retry_status: { type: 'exhausted' } });
  });

  it('passes the retry status the brain chooses', () => {
    for (const status of ['retrying', 'exhausted', 'terminal'] as const satisfies RetryStatus['type'][]) {
      expect(sessionErrorOf(new ModelError('overloaded', 'x'), status).retry_status).toEqual({
        type: status,
      });
    }
  });

  it('anything that is not a ModelError is an unknown_error whose message does not leak the error', () => {
    const object = sessionErrorOf(new Error('connect ECONNREFUSED postgres://admin:secret@db'));
    expect(object.type).toBe('unknown_error');
    expect(object.message).not.toMatch(/secret|ECONNREFUSED/);
    expect(sessionErrorOf('a string thrown').type).toBe('unknown_error');
  });
});

describe('ModelError', () => {
  it('carries its kind, its status (null when there was no answer) and its cause', () => {
    const cause = new TypeError('fetch failed');
    const err = new ModelError('request_failed', 'No answer', { cause });
    expect(err).toBeInstanceOf(Error);
    expect(err).toMatchObject({ name: 'ModelError', kind: 'request_failed', status: null, cause });
    expect(new ModelError('overloaded', 'x', { status: 529 }).status).toBe(529);
  });
});
