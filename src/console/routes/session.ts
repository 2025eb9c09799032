import type { Hono } from 'hono';
import { notFound } from '../../api/errors.js';
import { toWireSession } from '../../api/routes/session-wire.js';
import type { AppEnv } from '../../api/types.js';
import { isSessionId } from '../../ids.js';
import { sessionWork } from '../../queue/index.js';
import { getSession, listEvents, toWireEvent } from '../../sessions/index.js';
import { operator } from '../context.js';
import { type SessionEventRow, type SessionFacts, sessionPage } from '../pages/session.js';
import { CONSOLE_BASE } from '../session.js';

/** Events a session page shows at most (the events list's largest page). */
const EVENTS_SHOWN = 1_000;
const ITEMS_SHOWN = 50;

/**
 * GET /console/sessions/{id} — a session: its facts, its events as a timeline, its work items
 * and a link to its journal. Read as an operator (any session, the platform lane's included,
 * which the sessions API does not serve).
 */
export function registerSessionRoute(app: Hono<AppEnv>): void {
  app.get(`${CONSOLE_BASE}/sessions/:sessionId`, async (c) => {
    const { db } = await operator(app, c);
    const id = c.req.param('sessionId');
    const session = isSessionId(id) ? await getSession(db, id) : null;
    if (!session) throw notFound('session not found');
    const events = await listEvents(db, id, { order: 'asc', fetch: EVENTS_SHOWN + 1 });
    const items = await sessionWork(db, id, ITEMS_SHOWN);
    return c.html(
      sessionPage({
        session: session.agent ? (toWireSession(session) as unknown as SessionFacts) : null,
        sessionId: id,
        environmentId: session.environmentId,
        events: events.slice(0, EVENTS_SHOWN).map((e) => toWireEvent(e) as SessionEventRow),
        truncated: events.length > EVENTS_SHOWN,
        items,
      }),
    );
  });
}
