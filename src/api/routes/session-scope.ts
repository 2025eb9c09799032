/**
 * What the session routes share: their paths, the path's session id checked before anything
 * reaches SQL, and the visibility rule — an environment key sees only its own environment's
 * sessions, and anything else looks exactly like a missing session.
 */
import type { Context } from 'hono';
import type { Principal } from '../../auth/credentials.js';
import { isSessionId } from '../../ids.js';
import { getSession, type Session } from '../../sessions/index.js';
import { notFound } from '../errors.js';
import type { AppEnv } from '../types.js';

export const SESSIONS = '/v1/sessions';
export const SESSION = `${SESSIONS}/:sessionId`;
export const SESSION_EVENTS = `${SESSION}/events`;

export const sessionNotFound = () => notFound('session not found');

/** The path's session id, or a 404 when it is not one a session could have. */
export function sessionParam(c: Context<AppEnv>): string {
  const id = c.req.param('sessionId') ?? '';
  if (!isSessionId(id)) throw sessionNotFound();
  return id;
}

/** May `caller` see a session of `environmentId`? API keys see all; an environment key its own. */
export function sees(caller: Principal, environmentId: string): boolean {
  return caller.kind !== 'environment' || caller.environmentId === environmentId;
}

/**
 * The session the caller may see, or a 404. Sessions the platform lane opened (no agent, no
 * log: their brain is the platform's own) are not served here: to the SDK's worker they are
 * missing, so it fails such an item at once instead of waiting on a log nobody writes.
 */
export async function visibleSession(c: Context<AppEnv>, caller: Principal): Promise<Session> {
  const session = await getSession(c.get('deps').db, sessionParam(c));
  if (!session || session.agent === null || !sees(caller, session.environmentId)) throw sessionNotFound();
  return session;
}
