import type { Hono } from 'hono';
import * as z from 'zod/mini';
import { postEvents } from '../../loop/index.js';
import { toWireEvent } from '../../sessions/index.js';
import { ANY_KEY, authorize } from '../auth.js';
import { parseWith, readJson } from '../body.js';
import { badRequest } from '../errors.js';
import { document, errorEnvelope } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { normalizeEvent, sendEventsBody } from './session-body.js';
import { SESSION_EVENTS, sessionParam, visibleSession } from './session-scope.js';
import { wireEventListSchema } from './session-wire.js';

/**
 * POST /v1/sessions/{id}/events `{events: [...]}` — appends them in order, each with what it
 * sets off (see src/loop/post-events.ts), all in one transaction. An environment key may send
 * only tool results and confirmations, to its own sessions (403 for anything else). A result
 * repeated word for word is accepted and writes nothing (the SDK's worker retries sends it
 * never saw answered); a different result for an answered call is a 400, never a 409 (which
 * the worker would retry for its whole lease).
 */
export function registerSessionEventsSend(app: Hono<AppEnv>): void {
  document({
    method: 'post',
    path: SESSION_EVENTS,
    summary: 'Send events to a session',
    credentials: ['admin_api_key', 'platform_api_key', 'environment_key'],
    body: sendEventsBody,
    responses: {
      200: { description: 'the events as stored', schema: z.pick(wireEventListSchema, { data: true }) },
      400: { description: 'an event the session cannot take, named', schema: errorEnvelope },
      403: {
        description: 'an environment key sending anything but tool results or confirmations',
        schema: errorEnvelope,
      },
    },
  });
  app.post(SESSION_EVENTS, async (c) => {
    const caller = await authorize(c, ANY_KEY);
    const id = sessionParam(c);
    const body = parseWith(sendEventsBody, await readJson(c));
    const events = body.events.map((e, i) => {
      if (e.type === 'user.define_outcome')
        throw badRequest(`events.${i}: user.define_outcome is not supported here`);
      return normalizeEvent(e);
    });
    const poster =
      caller.kind === 'environment'
        ? ({ kind: 'environment', environmentId: caller.environmentId } as const)
        : ({ kind: 'api' } as const);
    // The session first: another environment's, or one the platform lane opened, answers 404
    // exactly like a missing one, before what the key may send is judged (403).
    await visibleSession(c, caller);
    const deps = c.get('deps');
    const stored = await postEvents(deps.db, id, events, poster);
    deps.turnEnqueued?.();
    return reply(c, { data: stored.map(toWireEvent) });
  });
}
