import type { Hono } from 'hono';
import { MAX_METADATA_PAIRS } from '../../environments/index.js';
import { updateSession } from '../../sessions/index.js';
import { API_KEY, authorize } from '../auth.js';
import { parseWith, readJson } from '../body.js';
import { badRequest } from '../errors.js';
import { document } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { checkedMetadata, invalidMetadata } from './environment-body.js';
import { updateSessionBody } from './session-body.js';
import { SESSION, sessionNotFound, sessionParam } from './session-scope.js';
import { toWireSession, wireSessionSchema } from './session-wire.js';

/**
 * POST /v1/sessions/{id} `{title?, metadata?}` — title (null clears) and a metadata patch
 * (null or "" deletes a key). Work items enqueued later carry the new metadata. Changing the
 * agent's tools mid-session, a budget or vaults is refused by name.
 */
export function registerSessionsUpdate(app: Hono<AppEnv>): void {
  document({
    method: 'post',
    path: SESSION,
    summary: 'Update a session',
    credentials: ['admin_api_key', 'platform_api_key'],
    body: updateSessionBody,
    responses: { 200: { description: 'the session', schema: wireSessionSchema } },
  });
  app.post(SESSION, async (c) => {
    await authorize(c, API_KEY);
    const id = sessionParam(c);
    const body = parseWith(updateSessionBody, await readJson(c));
    if (body.agent != null) throw badRequest('agent: a session keeps the agent version it was created with');
    if (body.budget != null)
      throw badRequest('budget: Leasehold prices no turn, so it cannot enforce a budget');
    if (body.vault_ids?.length) throw badRequest('vault_ids: vaults are not supported here');
    const outcome = await updateSession(c.get('deps').db, id, {
      title: body.title,
      metadata: checkedMetadata(body.metadata),
    });
    if (!outcome.ok && outcome.reason === 'not_found') throw sessionNotFound();
    if (!outcome.ok)
      throw invalidMetadata(`metadata may have at most ${MAX_METADATA_PAIRS} keys after the update`);
    return reply(c, toWireSession(outcome.session));
  });
}
